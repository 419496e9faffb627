"""A deadline failure is confirmed before it is reported: what a unit's attempt notes, which
findings run again, and the verdict of a unit run twice (the second time alone)."""

from __future__ import annotations

import asyncio

from vfcheck._host.attempts import (
    CURRENT_ATTEMPT,
    KILLED,
    TWICE,
    Attempt,
    confirmed,
    deadline_hit,
    needs_confirming,
    twice,
)
from vfcheck._shared.findings import Finding, TaskId

TASK = TaskId(0, "vfc-echo:hello world")
WHERE = "env 'vfc-echo', task 0 (vfc-echo:hello world)"
ROBUST = (f"{WHERE}: robustness failed — env code broke on 100 kB reply: the runner failed: "
          "episode exceeded the runner's 10s deadline. Contract: env code survives ...")


def finding(outcome: str, message: str, check: str = "robustness") -> Finding:
    return Finding(check, check, TASK, outcome, message, {"faults": 6})  # type: ignore[arg-type]


async def test_a_deadline_is_noted_on_the_attempt_of_the_unit_whose_tasks_hit_it() -> None:
    attempt = Attempt()
    token = CURRENT_ATTEMPT.set(attempt)
    try:  # a task the unit starts inherits the attempt, as a memoised play does
        await asyncio.ensure_future(asyncio.sleep(0, deadline_hit("episode exceeded 10s")))
        deadline_hit("episode exceeded 10s")
    finally:
        CURRENT_ATTEMPT.reset(token)
    deadline_hit("outside any unit: nowhere")
    assert attempt.deadlines == ["episode exceeded 10s"]


def test_only_a_bad_verdict_after_a_deadline_runs_again() -> None:
    hit = Attempt(["episode exceeded the runner's 10s deadline"])
    assert needs_confirming(finding("failed", ROBUST), hit)
    assert needs_confirming(finding("error", "vfcheck could not ..."), hit)
    assert not needs_confirming(finding("passed", "ok"), hit)  # it finished in time after all
    assert not needs_confirming(finding("skipped", "no rewards"), hit)
    assert not needs_confirming(finding("failed", ROBUST), Attempt())  # no deadline: it stands


def test_a_second_timeout_fails_and_says_it_timed_out_twice_the_second_time_alone() -> None:
    first = finding("failed", ROBUST)
    verdict = confirmed(first, ["episode exceeded the runner's 10s deadline"],
                        finding("failed", ROBUST), ["episode exceeded the runner's 10s deadline"])
    assert verdict.outcome == "failed"
    assert verdict.message == (
        f"{WHERE}: robustness failed — {TWICE}: env code broke on 100 kB reply: the runner "
        "failed: episode exceeded the runner's 10s deadline. Contract: env code survives ...")
    assert verdict.details["first_attempt"] == {
        "outcome": "failed", "message": ROBUST,
        "deadlines": ["episode exceeded the runner's 10s deadline"]}
    assert verdict.details["faults"] == 6


def test_a_second_run_that_finishes_makes_the_verdict_its_own_noting_the_first() -> None:
    first = finding("failed", ROBUST)
    verdict = confirmed(first, ["episode exceeded the runner's 10s deadline"],
                        finding("passed", f"{WHERE}: env code survived 6 kinds of bad output"),
                        [])
    assert verdict.outcome == "passed"
    assert verdict.message == (
        f"{WHERE}: env code survived 6 kinds of bad output (the first attempt hit a deadline "
        "under load: episode exceeded the runner's 10s deadline; run again alone, it passed)")
    assert verdict.details["first_attempt"]["outcome"] == "failed"
    # a real failure found the second time is reported as such, the first attempt noted
    real = confirmed(first, ["x"], finding("failed", f"{WHERE}: robustness failed — NaN"), [])
    assert real.outcome == "failed" and TWICE not in real.message
    assert real.message.endswith("(the first attempt hit a deadline under load: x; run again "
                                 "alone, its verdict is failed)")


def test_a_unit_killed_with_its_worker_is_noted_as_such() -> None:
    verdict = confirmed(None, [KILLED], finding("passed", f"{WHERE}: ok"), [])
    assert verdict.details["first_attempt"] == {"outcome": None, "message": None,
                                                "deadlines": [KILLED]}
    assert KILLED in verdict.message


def test_the_words_go_after_the_checks_failed_else_after_where() -> None:
    assert twice(f"{WHERE}: gold failed — it timed out (TimeoutError).", "gold") == (
        f"{WHERE}: gold failed — {TWICE}: it timed out (TimeoutError).")
    assert twice(f"{WHERE}: gold did not finish within 35s (timeout 10s per step).", "gold") == (
        f"{WHERE}: {TWICE}: gold did not finish within 35s (timeout 10s per step).")
    assert twice("env 'x': loading did not finish within 60s.", "load") == (
        f"env 'x': {TWICE}: loading did not finish within 60s.")
    assert twice("no place named", "load") == f"{TWICE}: no place named"
