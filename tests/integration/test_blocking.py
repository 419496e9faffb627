"""A hook that blocks the event loop or swallows its cancellation costs one task, not the run.

`vfcheck check` on each broken-by-design fixture, as a user runs it: the first check that
reaches the bad hook fails naming the hook and the file and line where it is stuck; the
task's other checks that run the same stage fail as `blocked — see <that finding>` (or are
skipped as blocked by a failed setup) without running it again; every other task gets its
real verdict; `hygiene.processes` still runs; no `error` finding. Each run prints its wall
time and the load average (never asserted: the machine is shared).
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support import FIXTURES, by_unit, check_report

from vfcheck._host.attempts import TWICE

SCORING = {"gold", "noop", "episode", "lifecycle", "preview", "robustness",
           "determinism.replay", "golden"}
"""The checks that score a task (`CheckSpec.stages` holds `scoring`)."""
EPISODES = {"episode", "lifecycle", "preview", "robustness", "determinism.replay", "golden"}
CONFORMANCE = "load,determinism,setup,gold,noop,episode,lifecycle,preview,robustness,golden," \
              "hygiene"
"""The families these tests hold the stalling fixtures to; the fixtures are vfc-echo, whose
prompt shows its answer by design, so the reward probes have tests of their own."""


@dataclass(frozen=True)
class Case:
    task: int
    """The task whose hook stalls."""
    says: str
    """What the first finding names: the hook, how it stalled, and where (`file:` + line)."""
    call: str
    """What the stuck line calls."""
    hit: frozenset[str]
    """The checks of that task that must fail (the first one and those blocked by it)."""
    skipped_as_setup: frozenset[str] = frozenset()
    """Checks skipped as blocked by the task's failed setup (the setup stalled)."""


CASES = {
    "vfc-broken-reward-block": Case(
        2, "reward 'slow_grade' blocked the event loop at vfc_broken_reward_block.py:",
        "time.sleep", frozenset(SCORING)),
    "vfc-broken-reward-cancel": Case(
        2, "reward 'polled_grade' ignored cancellation at vfc_broken_reward_cancel.py:",
        "asyncio.sleep", frozenset(SCORING)),
    "vfc-broken-setup-block": Case(
        1, "VfcBrokenSetupBlockTask.setup blocked the event loop at vfc_broken_setup_block.py:",
        "time.sleep", frozenset({"setup"}), skipped_as_setup=frozenset(SCORING)),
    "vfc-broken-gold-block": Case(
        2, "VfcBrokenGoldBlockTask.validate blocked the event loop at "
        "vfc_broken_gold_block.py:", "time.sleep", frozenset({"gold"})),
}


def check_env(env_id: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
              *extra: str, timeout: int = 10, code: int = 1) -> dict[str, Any]:
    """`vfcheck check ENV --timeout 10 [extra]`, which exits `code`: its JSON report's env,
    the wall time printed."""
    load = os.getloadavg()[0]
    start = time.monotonic()
    args = ["--timeout", str(timeout), *extra]
    if "--checks" not in extra:
        args += ["--checks", CONFORMANCE]
    done = check_report(env_id, "--path", str(FIXTURES), *args, cwd=tmp_path, timeout=900)
    wall = time.monotonic() - start
    with capsys.disabled():
        print(f"\n{env_id}: `vfcheck check {' '.join(args)}` took {wall:.1f}s (load average "
              f"{load:.2f} before, {os.getloadavg()[0]:.2f} after)")
    assert done.returncode == code, done.stdout[-3000:] + done.stderr[-3000:]
    (env,) = done.report["envs"]
    assert isinstance(env, dict)
    return env


def not_passed(findings: dict[tuple[str, int | None], dict[str, Any]]) -> str:
    """Every finding that did not pass, whole, one per line: what an assertion shows."""
    return "\n".join(f"{check}[{task}] {f['outcome']}: {f['message']}"
                     for (check, task), f in findings.items() if f["outcome"] != "passed")


@pytest.mark.slow
@pytest.mark.parametrize("env_id", sorted(CASES))
def test_a_stalling_hook_fails_its_task_only(env_id: str, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    case = CASES[env_id]
    env = check_env(env_id, tmp_path, capsys)
    findings = by_unit(env)
    summary = not_passed(findings)
    assert not [u for u, f in findings.items() if f["outcome"] == "error"], summary
    assert findings[("hygiene.processes", None)]["outcome"] == "passed", summary
    # the other tasks: their real verdicts (vfc-echo's: passed, golden skipped unrecorded)
    others = {u: f["outcome"] for u, f in findings.items()
              if u[1] is not None and u[1] != case.task}
    assert others and set(others.values()) <= {"passed", "skipped"}, summary
    assert {u for u, outcome in others.items() if outcome == "skipped"} <= {
        ("golden", i) for i in range(3)}, summary
    # the env-level checks pass too
    assert {f["outcome"] for u, f in findings.items() if u[1] is None} == {"passed"}, summary
    # the stalled task: one finding names the hook and where; the rest point at it
    mine = {u[0]: f for u, f in findings.items() if u[1] == case.task}
    failed = {check for check, f in mine.items() if f["outcome"] == "failed"}
    assert failed == case.hit, summary
    first = [check for check in failed if "blocked — see" not in mine[check]["message"]]
    assert len(first) == 1, summary
    message = mine[first[0]]["message"]
    assert re.search(re.escape(case.says) + r"\d+ \(" + re.escape(case.call) + r"\)",
                     message), message
    blocked_by = f"blocked — see {first[0]}[{case.task}]: {case.says}"
    for check in failed - set(first):
        assert blocked_by in mine[check]["message"], mine[check]["message"]
    for check in case.skipped_as_setup:
        assert mine[check]["outcome"] == "skipped", summary
        assert f"blocked — Task.setup failed on this task (see setup[{case.task}])" in (
            mine[check]["message"])
    untouched = set(mine) - failed - case.skipped_as_setup
    assert {mine[c]["outcome"] for c in untouched} <= {"passed", "skipped"}, summary
    assert env["worker_starts"] == 2  # one restart: the stall named its unit


@pytest.mark.slow
def test_a_blocking_tool_fails_its_tasks_episodes_naming_the_tool(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Tools run in a server process of their own (on both tiers), so a tool that blocks
    blocks that server, not the worker: the episode waits until the runner's deadline,
    which names the tool call still unanswered. Tool envs' episodes start a tool server
    each (an interpreter), which a loaded 2-core machine makes slow (CI saw the
    well-behaved tasks' episodes take over 30 s): a play the deadline ended runs again
    alone before its check fails (`vfcheck._host.attempts`), so the well-behaved tasks
    pass at 30 s, and the hung task's checks fail only once they timed out twice, sharing
    the play they ran alone (one timeout more, not one per check). Two plays that did not
    finish are neither compared nor recorded: `determinism.replay` and `golden` (updating)
    fail as blocked, pointing at `episode`, and no golden trace is written for that task."""
    golden = tmp_path / "golden"
    env = check_env("vfc-broken-tool-block", tmp_path, capsys,
                    "--checks", "setup,gold,noop,episode,lifecycle,determinism,golden,hygiene",
                    "--golden-dir", str(golden), "--golden-update", timeout=30)
    findings = by_unit(env)
    summary = not_passed(findings)
    hit = {("episode", 2), ("lifecycle", 2), ("determinism.replay", 2), ("golden", 2)}
    assert {u for u, f in findings.items() if f["outcome"] != "passed"} == hit, summary
    assert {f["outcome"] for u, f in findings.items() if u in hit} == {"failed"}, summary
    for unit in hit:
        assert f"{unit[0]} failed — {TWICE}: " in findings[unit]["message"], summary
    stuck = "episode exceeded the runner's 30s deadline, waiting for the result of tool " \
            "call calc_add"
    assert stuck in findings[("episode", 2)]["message"]
    assert (f"determinism.replay failed — {TWICE}: blocked: the episode did not finish "
            f"({stuck}), so there is nothing to compare (episode[2] reports it)") in findings[
        ("determinism.replay", 2)]["message"], summary
    assert f"golden failed — {TWICE}: blocked: the episode did not finish ({stuck})" in (
        findings[("golden", 2)]["message"]), summary
    written = sorted(p.name for p in (golden / "vfc-broken-tool-block").iterdir())
    assert len(written) == 2 and not any("7+5" in name or "7-5" in name for name in written), \
        written  # tasks 0 and 1 only
    assert env["worker_starts"] == 1  # the worker's loop never stalled
