"""The `concurrency` family on real fixture envs: a stop hook that keeps the reply in a
module-level dict fails it, on the task that does, naming the reward, both values and the
episode's reply, while every other family stays clean there (the reward probes included:
their plays at once are looked at again one at a time); the same state kept per episode,
and the well-behaved fixtures checked two envs at once, stay clean; a non-deterministic
metric is left to `determinism`."""

from __future__ import annotations

import pytest
from support import FIXTURES, CheckCache, CheckRun, by_unit

from vfcheck.checks import BY_ID

from .test_checks import units_with

ECHO_DESIGN = ("exploit.echo-prompt", "exploit.answer-spam")
"""vfc-echo's own findings (its prompt shows the phrase, its reward is a substring match),
accepted for the vfc-echo-shaped fixtures here as the project accepts them for vfc-echo."""
BREAKS: dict[str, set[tuple[str, int | None]]] = {
    "vfc-broken-shared-state": {("concurrency", 1)},
}
"""Each broken fixture and what must fail on it: nothing else may."""
CLEAN = ["vfc-echo", "vfc-tool", "vfc-multiturn", "vfc-judge", "vfc-boxed-math", "vfc-duet",
         "vfc-episode-state"]
"""Well-behaved fixtures: `concurrency` passes on each sampled task."""


def allowed(*envs: str) -> list[str]:
    return [word for env in envs for check in ECHO_DESIGN
            for word in ("--allow", f"{env}::{check}=the echo design")]


@pytest.fixture(scope="module")
def shared_run(checked: CheckCache) -> CheckRun:
    """Every family on the broken fixture and its well-behaved twin, checked at once."""
    envs = ["vfc-broken-shared-state", "vfc-episode-state"]
    return checked.check(*envs, "--path", str(FIXTURES), *allowed(*envs))


@pytest.fixture(scope="module")
def clean_run(checked: CheckCache) -> CheckRun:
    return checked.check(*CLEAN, "--path", str(FIXTURES), "--checks", "concurrency",
                         "--envs-at-once", "2")


@pytest.mark.slow
def test_shared_state_fails_only_concurrency_naming_the_reward_values_and_reply(
        shared_run: CheckRun) -> None:
    env = shared_run.envs["vfc-broken-shared-state"]
    assert shared_run.returncode == 1
    assert units_with(env, {"failed", "error"}) == BREAKS["vfc-broken-shared-state"]
    assert {f["check"] for f in env["findings"] if f["outcome"] == "expected"} <= set(
        ECHO_DESIGN)
    finding = by_unit(env)[("concurrency", 1)]
    message = finding["message"]
    # The oracle's format is chosen from plays at once, which share this fixture's dict: on
    # a busy machine the bare 'ping' can be scored on another probe's reply and lose to
    # `<answer>ping</answer>` (CI, load 9). Either is the reference answer in a format.
    oracle = finding["details"]["replies"]["oracle"]
    assert "ping" in oracle.lower(), message
    assert message.startswith("env 'vfc-broken-shared-state', task 1 (vfc-echo:ping): "
                              "concurrency failed — episodes at once score differently from "
                              "one at a time: state shared between episodes? Of 4 episodes "
                              f"of the task played at once (replies {oracle!r}, '', "
                              f"{oracle!r}, '')"), message
    assert "got reward echoed " in message and " at once, " in message
    assert " one at a time (" in message and "scored on another episode's reply?" in message
    assert BY_ID["concurrency"].contract in message
    rows = finding["details"]["differences"]
    assert rows and {r["field"] for r in rows} == {"reward echoed"}
    assert all(r["at_once"] != r["alone"] for r in rows)
    for index in (0, 2):
        assert by_unit(env)[("concurrency", index)]["outcome"] == "passed"


@pytest.mark.slow
def test_the_reward_probes_do_not_call_a_live_reward_dead_there(shared_run: CheckRun) -> None:
    """The probes play at once too: scored on each other's replies, a right reply earns 0
    and a wrong one 1. No reward or exploit verdict fails on the fixture; one whose plays at
    once disagreed with the plays one at a time says so, and points to concurrency."""
    env = shared_run.envs["vfc-broken-shared-state"]
    for finding in env["findings"]:
        family = finding["family"]
        if family not in ("reward", "exploit", "judge", "determinism", "golden"):
            continue
        assert finding["outcome"] in {"passed", "skipped", "expected"}, finding["message"]
        if "disagreed" in finding["message"]:
            assert finding["message"].rstrip(".").endswith(
                f"see concurrency[{finding['task']['index']}]"), finding["message"]
            assert finding["details"]["at_once"]
    for index in range(3):
        assert by_unit(env)[("reward.reachable", index)]["outcome"] == "passed"


@pytest.mark.slow
def test_state_kept_per_episode_stays_clean(shared_run: CheckRun) -> None:
    env = shared_run.envs["vfc-episode-state"]
    assert units_with(env, {"failed", "error"}) == set()
    assert units_with(env, {"passed"}) >= {("concurrency", i) for i in range(3)}


@pytest.mark.slow
@pytest.mark.parametrize("env_id", CLEAN)
def test_well_behaved_fixtures_pass_two_envs_at_once(clean_run: CheckRun, env_id: str) -> None:
    env = clean_run.envs[env_id]
    findings = [f for f in env["findings"] if f["check"] == "concurrency"]
    assert findings and all(f["outcome"] == "passed" for f in findings), [
        f["message"] for f in findings]
    assert "played at once" in findings[0]["message"]


@pytest.mark.slow
def test_a_random_metric_is_left_to_determinism(checked: CheckCache) -> None:
    """vfc-broken-determinism's metric is random on task 1: at once and one at a time
    differ there, and so do two plays one at a time. That is no shared state: skipped,
    pointing to determinism.replay, which fails."""
    run = checked.check("vfc-broken-determinism", "--path", str(FIXTURES), "--checks",
                        "concurrency,determinism")
    env = run.envs["vfc-broken-determinism"]
    skipped = by_unit(env)[("concurrency", 1)]
    assert skipped["outcome"] == "skipped", skipped["message"]
    assert "review_priority" in skipped["message"]
    assert "see determinism.replay[1]" in skipped["message"]
    assert ("determinism.replay", 1) in units_with(env, {"failed"})
    assert {("concurrency", 0), ("concurrency", 2)} <= units_with(env, {"passed"})
