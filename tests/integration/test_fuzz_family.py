"""The `fuzz` family on real fixture envs: a careless `\\boxed{}` or JSON reward fails with
the shrunk reply in the env's format, the reward, file:line and code line, and a replay
script that reproduces it; the well-behaved boxed, tagged, JSON and echo fixtures stay
clean (a `raise` of the env's own contract is no crash); the same seed gives the same
verdict; hypothesis writes nothing into the working directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support import FIXTURES, CheckCache, CheckRun, check_report, vfcheck

from vfcheck.checks import BY_ID

from .test_checks import units_with

BROKEN = {
    "vfc-broken-fuzz-boxed": ("ValueError: could not convert string to float",
                              "in reward 'boxed_value' at vfc_broken_fuzz_boxed.py:",
                              "`return float(float(found[-1]) == float(self.data.answer))`"),
    "vfc-broken-fuzz-json": ("in reward 'city' at vfc_broken_fuzz_json.py:",
                             '`return float(obj["city"].strip().casefold() == '
                             'self.data.answer.casefold())`'),
}
"""Each broken fixture and what every one of its fuzz failures must name."""
CLEAN = ["vfc-boxed-math", "vfc-answer-tags", "vfc-json-contract", "vfc-echo"]
SAMPLED = range(3)
FAMILIES_BUT_FUZZ = ("load,setup,gold,noop,episode,lifecycle,preview,robustness,reward,"
                     "exploit,judge")
"""What else must stay clean on the broken fixtures (golden, served, hygiene and
determinism have nothing format-related to say, and cost the most)."""


def fuzz_findings(run: CheckRun, env: str) -> list[dict[str, Any]]:
    return [f for f in run.envs[env]["findings"] if f["check"] == "fuzz"]


@pytest.fixture(scope="module")
def broken_run(checked: CheckCache) -> CheckRun:
    return checked.check(*sorted(BROKEN), "--path", str(FIXTURES), "--checks",
                         f"{FAMILIES_BUT_FUZZ},fuzz")


@pytest.mark.slow
@pytest.mark.parametrize("env_id", sorted(BROKEN))
def test_a_careless_parser_fails_only_fuzz_with_the_shrunk_reply(
        broken_run: CheckRun, env_id: str) -> None:
    env = broken_run.envs[env_id]
    assert units_with(env, {"failed", "error"}) == {("fuzz", i) for i in SAMPLED}
    for finding in fuzz_findings(broken_run, env_id):
        message = finding["message"]
        assert f"env {env_id!r}, task {finding['task']['index']}" in message
        assert BY_ID["fuzz"].contract in message
        for part in BROKEN[env_id]:
            assert part in message, message
        reply = finding["details"]["reply"]
        assert f"on the reply '{reply}'" in message or f"on the reply {reply!r}" in message
        assert len(reply) <= 12, reply  # shrunk: `\boxed{}`, `{}`, `null`, ...
        assert f"vfcheck run {env_id} --script FILE" in message


@pytest.mark.slow
def test_the_replay_script_reproduces_the_crash(broken_run: CheckRun, tmp_path: Path) -> None:
    finding = fuzz_findings(broken_run, "vfc-broken-fuzz-boxed")[0]
    script = tmp_path / "fuzz.toml"
    script.write_text(finding["details"]["replay_script"])
    done = vfcheck("run", "vfc-broken-fuzz-boxed", "--path", str(FIXTURES), "--script",
                   str(script), cwd=tmp_path)
    episodes = tmp_path / "vfcheck-runs" / "vfc-broken-fuzz-boxed" / "episodes.jsonl"
    assert episodes.exists(), done.stdout[-2000:] + done.stderr[-2000:]
    lines = [json.loads(line) for line in episodes.read_text().splitlines() if line.strip()]
    index = finding["task"]["index"]
    crashed = [line["task"]["index"] for line in lines
               if "could not convert string to float" in " ".join(line["errors"])]
    assert crashed == [index], "the scripted task replays the crash, and only it"


@pytest.mark.slow
def test_well_behaved_formats_stay_clean(checked: CheckCache) -> None:
    run = checked.check(*CLEAN, "--path", str(FIXTURES), "--checks", "fuzz")
    for env in CLEAN:
        findings = fuzz_findings(run, env)
        assert findings, env
        for finding in findings:
            assert finding["outcome"] == "passed", finding["message"]
    refused = [f["details"]["refused"] for f in fuzz_findings(run, "vfc-json-contract")]
    assert all(refused), refused  # its contract's own raise: counted, not failed


@pytest.mark.slow
def test_the_same_seed_gives_the_same_verdict_and_nothing_lands_in_the_cwd(
        tmp_path: Path) -> None:
    runs = []
    for name in ("a", "b"):
        folder = tmp_path / name
        folder.mkdir()
        runs.append(check_report("vfc-broken-fuzz-json", "--path", str(FIXTURES), "--checks",
                                 "fuzz", "--seed", "7", "--fuzz-examples", "6", cwd=folder))
        # nothing but the report: hypothesis keeps no example database, and what it would
        # write (its home) goes under the project's .vfcheck/hypothesis, never .hypothesis
        left = sorted(p.name for p in folder.iterdir())
        assert set(left) <= {"report.json", ".vfcheck"}, left
        if (folder / ".vfcheck").exists():
            assert [p.name for p in (folder / ".vfcheck").iterdir()] == ["hypothesis"]
    first, second = ([(f["task"]["index"], f["outcome"], f["details"]["reply"])
                      for f in fuzz_findings(run, "vfc-broken-fuzz-json")] for run in runs)
    assert first == second and first


TOOL_ENVS = ["vfc-tool", "echo-tool-v1"]


@pytest.mark.slow
def test_tool_envs_stay_clean_with_tool_calls_off_their_schema(
        checked: CheckCache, verifiers_fixtures: Path) -> None:
    """vfc-tool and verifiers' echo-tool-v1: their tools are called with arguments off the
    schema (the tool server answers with a validation error, which their rewards read as
    no proof), then replied to; env code never raises."""
    run = checked.check(*TOOL_ENVS, "--path", str(FIXTURES), "--path",
                        str(verifiers_fixtures), "--checks", "fuzz")
    for env in TOOL_ENVS:
        findings = fuzz_findings(run, env)
        assert findings, env
        for finding in findings:
            assert finding["outcome"] == "passed", finding["message"]
            assert finding["details"]["tool_calls"] > 0, finding["details"]
            assert "with arguments off their schema" in finding["message"]


@pytest.mark.slow
def test_a_crash_on_every_reply_is_the_episodes_not_the_replys(checked: CheckCache) -> None:
    """vfc-broken-reward-crash's reward raises `KeyError: 'ping'` on task 1 whatever the
    reply (openenv-wordle's missing `openenv` module has the same shape): vfcheck's default
    reply raises at the same line, so fuzz blames no reply and points at episode; the
    other tasks are searched as usual, and vfc-broken-fuzz-boxed still fails
    (test_a_careless_parser_fails_only_fuzz_with_the_shrunk_reply)."""
    run = checked.check("vfc-broken-reward-crash", "--path", str(FIXTURES), "--checks",
                        "fuzz,episode")
    env = run.envs["vfc-broken-reward-crash"]
    assert units_with(env, {"failed", "error"}) == {("episode", 1)}
    by_task = {f["task"]["index"]: f for f in fuzz_findings(run, "vfc-broken-reward-crash")}
    assert by_task[0]["outcome"] == by_task[2]["outcome"] == "passed"
    blocked = by_task[1]
    assert blocked["outcome"] == "skipped"
    assert blocked["message"].startswith(
        "env 'vfc-broken-reward-crash', task 1 (vfc-echo:ping): blocked — env code raises on "
        "vfcheck's default reply too, at the same line (TaskError: ")
    assert "KeyError: 'ping' (in reward 'echoed' at vfc_broken_reward_crash.py:" \
           in blocked["message"]
    assert "see episode[1]" in blocked["message"]
