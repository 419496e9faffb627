"""Every check family fails on its broken-by-design fixture, on exactly the broken task,
with a message naming the env, the task, the contract and what was observed, while the
rest passes; the well-behaved fixtures pass everything. Driven through the pytest plugin
(`pytester`), as an env author runs it."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest
from support import FIXTURES, CheckCache, PluginRun, by_unit, run_plugin

from vfcheck.checks import BY_ID

pytest_plugins = ["pytester"]

Unit = tuple[str, int | None]

BROKEN: dict[str, set[Unit]] = {
    "vfc-broken-determinism": {("determinism.load", None), ("determinism.replay", 1),
                               ("golden", 1)},
    "vfc-broken-setup": {("setup", 1)},
    "vfc-broken-gold": {("gold", 1)},
    "vfc-broken-noop": {("noop", 1)},
    "vfc-broken-episode": {("episode", 1)},
    "vfc-broken-lifecycle": {("lifecycle", 1)},
    "vfc-broken-preview": {("preview", 1)},
    "vfc-broken-robustness": {("robustness", 1)},
    "vfc-broken-golden": {("golden", 1)},
    "vfc-broken-hook-types": {("gold", 1), ("noop", 1), ("episode", 1), ("robustness", 1),
                              ("episode", 2), ("robustness", 2), ("gold", 3)},
    "vfc-broken-leak": {("hygiene.processes", None)},
    "vfc-broken-tmp-leak": {("hygiene.files", None)},
}
"""Each broken fixture and the findings that must fail on it: nothing else may."""

HOOK_TYPES: dict[Unit, str] = {
    ("episode", 1): "@vf.reward echoed returned 'yes' (str), not a number",
    ("gold", 1): "a scoring hook returned 'yes' (str), not a number",
    ("noop", 1): "@vf.reward echoed returned 'no' (str), not a number",
    ("episode", 2): "@vf.stop single_turn returned None (NoneType), not a bool",
    ("gold", 3): "Task.validate returned 'yes' (str), not a bool",
}
"""vfc-broken-hook-types: what the message of each wrong-type hook's finding must say."""

LOAD_BROKEN = {
    "vfc-broken-load-raises": "ValueError: dataset file missing: vfc_broken_load_raises.jsonl "
    "(run the build script first) (in VfcBrokenLoadRaisesTaskset.load at "
    "vfc_broken_load_raises.py:29: `raise ValueError(",
    "vfc-broken-load-construct": "AttributeError: 'str' object has no attribute 'read_text' "
    "(config field VfcBrokenLoadConstructConfig.system_prompt: str at "
    "vfc_broken_load_construct.py:22 redefines verifiers' SharedTasksetConfig.system_prompt: "
    "Path | None, which verifiers reads at verifiers/v1/taskset.py:",
    "vfc-broken-load-network": "reached for the network (huggingface.co)",
    "vfc-broken-load-empty": "yielded no task",
    "vfc-broken-load-dupkeys": "task keys repeat",
    "vfc-broken-load-import": "No module named 'vfc_no_such_dependency' (in <module> at "
    "vfc_broken_load_import.py:19",
    "vfc-broken-load-two": "exports 2 Taskset subclasses",
    "vfc-broken-load-exit": "called sys.exit('VFC_ECHO_CONFIG is not set') (SystemExit)",
}

WELL_BEHAVED = ["vfc-echo", "vfc-multiturn", "vfc-duet"]
CONFORMANCE = ("--vf-checks=load,determinism,setup,gold,noop,episode,lifecycle,preview,"
               "robustness,concurrency,golden,hygiene")
"""The families this module holds the fixtures to. The reward probes (`reward`, `exploit`,
`judge`) have their own fixtures and tests (tests/integration/test_reward_probes.py): most fixtures
here are vfc-echo, whose prompt shows its answer by design."""

GOLDEN = FIXTURES.parent / "golden"
"""The fixture envs' committed golden traces (vfc-broken-golden's are stale on purpose)."""


def units_with(env: dict[str, Any], outcomes: set[str]) -> set[Unit]:
    return {
        (f["check"], f["task"]["index"] if f["task"] else None)
        for f in env["findings"] if f["outcome"] in outcomes
    }


@pytest.fixture(scope="module")
def broken_run(checked: CheckCache) -> PluginRun:
    """The broken fixtures, checked once for all the tests that read the verdicts."""
    return checked.plugin(sorted(BROKEN), f"--vf-golden-dir={GOLDEN}", CONFORMANCE)


@pytest.mark.slow
@pytest.mark.parametrize("env_id", sorted(BROKEN))
def test_each_family_fails_on_exactly_the_broken_task(
    broken_run: PluginRun, env_id: str
) -> None:
    assert broken_run.ret == 1
    env = broken_run.envs[env_id]
    assert units_with(env, {"failed", "error"}) == BROKEN[env_id]
    for finding in env["findings"]:
        unit = (finding["check"], finding["task"]["index"] if finding["task"] else None)
        if unit in BROKEN[env_id]:
            message = finding["message"]
            assert f"env {env_id!r}" in message
            if finding["task"] is not None:
                assert f"task {finding['task']['index']} ({finding['task']['key']})" in message
            assert BY_ID[finding["check"]].contract in message
        else:  # the rest passes, or is skipped with its reason
            assert finding["outcome"] in {"passed", "skipped"}, finding


@pytest.mark.slow
def test_a_hook_of_the_wrong_type_is_named_with_what_it_returned_and_its_rule(
    broken_run: PluginRun,
) -> None:
    findings = {(f["check"], f["task"]["index"] if f["task"] else None): f
                for f in broken_run.envs["vfc-broken-hook-types"]["findings"]}
    for unit, observed in HOOK_TYPES.items():
        message = findings[unit]["message"]
        assert observed in message and "\n" not in message, message
    assert "Contract: " in findings[("gold", 1)]["message"]
    assert findings[("episode", 2)]["message"].endswith("; @vf.stop hooks return a bool.")
    # no model request was made on task 2: preview has nothing to judge, and says why
    preview = findings[("preview", 2)]
    assert preview["outcome"] == "skipped" and "before the first model request" in preview[
        "message"]


@pytest.mark.slow
def test_a_failing_item_is_reported_under_its_node_id_with_a_replay_line(
    broken_run: PluginRun,
) -> None:
    assert any(line.startswith("FAILED vfc-broken-gold::gold[1]") for line in broken_run.lines)
    assert not any(line.startswith("FAILED vfc-broken-gold::gold[0]")
                   for line in broken_run.lines)
    replay = [line for line in broken_run.lines
              if line.startswith("replay: pytest --vf-env vfc-broken-gold ")]
    assert replay and replay[0].endswith("--vf-only 'gold[1]'")


@pytest.mark.slow
def test_the_printed_replay_line_runs_exactly_that_item(
    broken_run: PluginRun, pytester: pytest.Pytester,
) -> None:
    line = next(x for x in broken_run.lines if x.startswith("replay: ")
                and "vfc-broken-noop" in x)
    words = shlex.split(line.removeprefix("replay: "))
    assert words[0] == "pytest"
    again = pytester.runpytest_subprocess(*words[1:], "-p", "no:cacheprovider", timeout=600)
    again.assert_outcomes(failed=1)
    again.stdout.fnmatch_lines(["*vfc-broken-noop::noop[[]1[]]*"])


@pytest.mark.slow
@pytest.mark.parametrize("env_id", WELL_BEHAVED)
def test_well_behaved_envs_pass_every_check(tmp_path: Path, env_id: str) -> None:
    run = run_plugin(tmp_path, FIXTURES, [env_id], f"--vf-golden-dir={GOLDEN}", CONFORMANCE,
                     "--vf-golden-strict")
    env = run.envs[env_id]
    bad = [f for f in env["findings"] if f["outcome"] not in {"passed", "skipped"}]
    assert bad == [], bad
    assert run.ret == 0
    families = {f["check"] for f in env["findings"]}
    covered = set(CONFORMANCE.split("=", 1)[1].split(","))
    assert families == {spec.id for spec in BY_ID.values() if spec.family in covered}


@pytest.mark.slow
def test_load_failures_are_one_failing_item_each_and_other_envs_still_run(
    tmp_path: Path,
) -> None:
    run = run_plugin(tmp_path, FIXTURES, [*sorted(LOAD_BROKEN), "vfc-echo"],
                     "--vf-checks", "gold")
    envs = run.envs
    assert run.ret == 1
    for env_id, cause in LOAD_BROKEN.items():
        (finding,) = envs[env_id]["findings"]
        assert (finding["check"], finding["outcome"]) == ("load", "failed")
        assert cause in finding["message"] and "\n" not in finding["message"]
        assert any(line.startswith(f"FAILED {env_id}::load") for line in run.lines)
    assert units_with(envs["vfc-echo"], {"passed"}) == {
        ("load", None), ("gold", 0), ("gold", 1), ("gold", 2)}


@pytest.mark.slow
@pytest.mark.parametrize("env_id", ["vfc-broken-setup-hang", "vfc-broken-setup-block"])
def test_a_hanging_or_blocking_setup_is_bounded(tmp_path: Path, env_id: str) -> None:
    """A sync sleep in a hook freezes the worker's event loop: the supervisor kills it at
    the hard deadline, names the task, and the other tasks are still checked."""
    run = run_plugin(tmp_path, FIXTURES, [env_id, "vfc-echo"],
                     "--vf-checks", "setup,gold", "--vf-timeout", "3")
    envs, result = run.envs, run
    assert units_with(envs[env_id], {"failed", "error"}) == {("setup", 1)}
    assert units_with(envs[env_id], {"passed"}) >= {("setup", 0), ("setup", 2), ("gold", 0)}
    assert units_with(envs["vfc-echo"], {"failed", "error"}) == set()
    assert result.ret == 1
    # an async hang ends at the worker's own deadline; a blocked event loop needs the
    # supervisor to kill and restart the worker
    starts = envs[env_id]["worker_starts"]
    assert starts == 1 if env_id.endswith("hang") else starts >= 2
    if env_id.endswith("hang"):  # its run alone names where setup was waiting
        from .test_deadlines import HANG_SITE

        setup = by_unit(envs[env_id])[("setup", 1)]["message"]
        assert f"it timed out (TimeoutError), {HANG_SITE}" in setup, setup


@pytest.mark.slow
def test_a_setup_that_needs_the_envs_serving_is_not_failed_when_serving_could_not_start(
        tmp_path: Path) -> None:
    """vfc-managed-server (nemo-gym-weather's shape): its tasks' setup needs the server the
    env's `start()` brings up, which it cannot offline. No setup, gold or noop is `failed`:
    each is an `error` naming the env's serving. vfc-broken-setup, in the same run, still
    fails setup[1] (and only it)."""
    run = run_plugin(tmp_path, FIXTURES, ["vfc-managed-server", "vfc-broken-setup"],
                     "--vf-checks", "setup,gold,noop")
    managed = run.envs["vfc-managed-server"]
    assert units_with(managed, {"failed"}) == set()
    errors = [f for f in managed["findings"] if f["outcome"] == "error"]
    assert {(f["check"], f["task"]["index"]) for f in errors} >= {("setup", i) for i in range(3)}
    for finding in errors:
        message = finding["message"]
        assert "could not be judged — the env's serving resources did not come up" in message
        assert "example.com" in message  # start()'s own failure, on one line
        assert "set server_url or use the managed server env" in message
        assert "\n" not in message
    assert units_with(run.envs["vfc-broken-setup"], {"failed", "error"}) == {("setup", 1)}
    assert run.ret == 1


@pytest.mark.slow
def test_an_env_that_parses_the_json_its_prompt_demands_plays_its_episode(
        tmp_path: Path) -> None:
    """vfc-json-contract (proposer-solver's shape): scoring raises unless the reply ends
    with the JSON object the prompt shows. The default reply ends with it, filled in, so
    `episode` passes; vfc-broken-episode, in the same run, still fails episode[1] only."""
    run = run_plugin(tmp_path, FIXTURES, ["vfc-json-contract", "vfc-broken-episode"],
                     "--vf-checks", "episode")
    assert units_with(run.envs["vfc-json-contract"], {"failed", "error"}) == set()
    assert units_with(run.envs["vfc-json-contract"], {"passed"}) >= {("episode", 0),
                                                                      ("episode", 1)}
    assert units_with(run.envs["vfc-broken-episode"], {"failed", "error"}) == {("episode", 1)}


@pytest.mark.slow
def test_lf_reruns_only_the_failed_item_and_x_stops_at_it(pytester: pytest.Pytester) -> None:
    args = ["--vf-env", "vfc-broken-gold", f"--vf-path={FIXTURES}", "--vf-checks", "gold"]
    first = pytester.runpytest_subprocess(*args, "-x", timeout=600)
    first.assert_outcomes(failed=1, passed=2)  # load, gold[0], then gold[1] stops the run
    again = pytester.runpytest_subprocess(*args, "--lf", timeout=600)
    again.assert_outcomes(failed=1, deselected=3)


@pytest.mark.slow
def test_under_xdist_an_env_is_checked_once(tmp_path: Path) -> None:
    """`pytest -n 2`: the controller runs the env's checks once; both workers read them."""
    run = run_plugin(tmp_path, FIXTURES, ["vfc-broken-gold"], "--vf-checks", "gold,noop",
                     "-n", "2")
    env = run.envs["vfc-broken-gold"]
    assert env["worker_starts"] == 1
    assert units_with(env, {"failed"}) == {("gold", 1)}
    assert run.ret == 1
    assert "1 failed, 5 passed, 1 skipped" in run.lines[-1]
