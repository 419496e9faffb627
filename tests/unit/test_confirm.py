"""The worker holds back a failure a deadline may have decided, runs the unit again once the
rest is done, alone, and reports that second verdict; the supervisor reads the held-back
unit as out of flight (no hard deadline runs for it meanwhile)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from vfcheck._host.attempts import TWICE, deadline_hit
from vfcheck._isolation.events import EventLog
from vfcheck._isolation.worker import Worker
from vfcheck._shared.findings import Finding
from vfcheck.checks._registry import CheckSpec

HIT = "episode exceeded the runner's 1s deadline"


def worker(tmp_path: Path) -> Worker:
    return Worker({"env_id": "vfc-echo", "events": str(tmp_path / "events.jsonl"),
                   "options": {}, "skip": [], "isolate": []})


def unit(outcomes: list[str], hits: list[bool], check: str = "episode") -> tuple[CheckSpec,
                                                                                  list[int]]:
    """A check whose n-th run has `outcomes[n]`, hitting a deadline where `hits[n]`."""
    runs: list[int] = []

    async def run(ctx: Any, task: Any) -> Finding:
        n = len(runs)
        runs.append(n)
        if hits[n]:
            deadline_hit(HIT)
        verb = "failed — the runner could not finish" if outcomes[n] == "failed" else "ok"
        return Finding(check, check, None, outcomes[n],  # type: ignore[arg-type]
                       f"env 'vfc-echo': {check} {verb}")

    return CheckSpec(check, check, "env", "c", "f", "w", fn=run, budget=1.0), runs


def findings(tmp_path: Path) -> list[dict[str, Any]]:
    lines = (tmp_path / "events.jsonl").read_text().splitlines()
    return [e["finding"] for e in map(json.loads, lines) if e["event"] == "finding"]


async def test_a_failure_after_a_deadline_waits_and_the_second_verdict_stands(
        tmp_path: Path) -> None:
    w = worker(tmp_path)
    spec, runs = unit(["failed", "passed"], [True, False])
    assert await w.run_unit(spec, None) is None  # held back: nothing reported yet
    assert findings(tmp_path) == []
    log = EventLog(tmp_path / "events.jsonl")
    log.poll()
    assert log.in_flight() == {}  # no hard deadline runs for it while it waits
    await w.confirm()
    (finding,) = findings(tmp_path)
    assert runs == [0, 1] and finding["outcome"] == "passed"
    assert finding["message"] == (f"env 'vfc-echo': episode ok (the first attempt hit a "
                                  f"deadline under load: {HIT}; run again alone, it passed)")
    assert finding["details"]["first_attempt"]["outcome"] == "failed"


async def test_a_second_timeout_fails_saying_so(tmp_path: Path) -> None:
    w = worker(tmp_path)
    spec, runs = unit(["failed", "failed"], [True, True])
    await w.run_unit(spec, None)
    await w.confirm()
    (finding,) = findings(tmp_path)
    assert runs == [0, 1] and finding["outcome"] == "failed"
    assert finding["message"] == f"env 'vfc-echo': episode failed — {TWICE}: the runner could " \
                                 "not finish"


async def test_a_failure_with_no_deadline_and_a_pass_are_reported_at_once(
        tmp_path: Path) -> None:
    w = worker(tmp_path)
    failing, runs = unit(["failed"], [False])
    assert (await w.run_unit(failing, None)) is not None
    slow_pass, _ = unit(["passed"], [True], check="lifecycle")
    assert (await w.run_unit(slow_pass, None)) is not None
    assert [f["outcome"] for f in findings(tmp_path)] == ["failed", "passed"]
    await w.confirm()
    assert runs == [0] and len(findings(tmp_path)) == 2  # nothing ran again


async def test_an_isolated_unit_runs_alone_once_and_notes_its_killed_first_attempt(
        tmp_path: Path) -> None:
    w = worker(tmp_path)
    spec, runs = unit(["failed"], [True])
    finding = await w.run_unit(spec, None, alone=True)
    assert finding is not None and TWICE in finding.message and runs == [0]
    spec, _ = unit(["passed"], [False], check="lifecycle")
    finding = await w.run_unit(spec, None, alone=True)
    assert finding is not None and finding.outcome == "passed"
    assert "its worker was killed at a hard deadline with this check in flight" in (
        finding.message)
