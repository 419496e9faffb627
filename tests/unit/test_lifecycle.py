"""Lifecycle rules on synthetic logs through the real recorder.

`FakeTrace` plays verifiers' side of `Trace` (timing spans, `notify`, `preview`, calls) so
that the logs under test are exactly what `TraceRecorder` makes of such a trace; a test
that needs an impossible log (a clock going back) edits the recorded events."""

from __future__ import annotations

import dataclasses
import time
from types import SimpleNamespace
from typing import Any

import pytest

from vfcheck._episodes.recorder import STAGES, NotifyEvent, TraceRecorder
from vfcheck.checks.lifecycle import (
    BOUNDARIES,
    RULES,
    Violation,
    describe_log,
    lifecycle_violations,
)


class FakeTrace:
    """Just enough of `verifiers.v1.Trace` for the recorder and the rules."""

    def __init__(self) -> None:
        self.id = "fake"
        self.timing = SimpleNamespace(
            **{stage: SimpleNamespace(start=0.0, end=0.0) for stage in STAGES}
        )
        self.calls: list[SimpleNamespace] = []
        self.ok = False
        self.is_completed = False
        self.errors: list[str] = []
        self.num_turns = 0
        self._pending: dict[int, list[str]] = {}
        self._on_change: Any = None
        self.recorder = TraceRecorder()
        self.recorder.on_trace(self)

    @property
    def pending(self) -> list[str]:
        return [m for messages in self._pending.values() for m in messages]

    @property
    def events(self) -> list[NotifyEvent]:
        return self.recorder.logs[self.id].events

    def watch(self, on_change: Any) -> None:
        self._on_change = on_change

    def notify(self) -> None:
        self._on_change(self)

    def stamp(self, *boundaries: str, notify: bool = True) -> FakeTrace:
        now = time.time()
        for boundary in boundaries:
            stage, edge = boundary.split(".")
            setattr(getattr(self.timing, stage), edge, now)
        if notify:
            self.notify()
        return self

    def preview(self, request: int = 0, size: int = 2) -> FakeTrace:
        self._pending[request] = ["m"] * size
        self.notify()
        return self

    def call(self, request: int = 0, error: str | None = None) -> FakeTrace:
        """The request's outcome: commit (or abandon on `error`), then the call record."""
        self._pending.pop(request, None)
        self.num_turns += error is None
        self.calls.append(SimpleNamespace(error=SimpleNamespace(type=error) if error else None))
        self.notify()
        return self

    def opened(self) -> FakeTrace:
        return self.stamp("boot.start").stamp("boot.end", "setup.start").stamp(
            "setup.end", "agent.start"
        )

    def closed(self, ok: bool = True) -> FakeTrace:
        """`rollout.py` `close()`: agent.end, a silent finalize.start, then scoring."""
        self.stamp("agent.end").stamp("finalize.start", notify=False)
        self.stamp("finalize.end", "scoring.start").stamp("scoring.end")
        self.ok = self.is_completed = ok
        return self


def happy(calls: int = 1) -> FakeTrace:
    trace = FakeTrace().opened()
    for _ in range(calls):
        trace.preview().call()
    return trace.closed()


def check(trace: FakeTrace) -> list[Violation]:
    return lifecycle_violations(trace.events, trace)


def rules(trace: FakeTrace) -> list[str]:
    return [v.rule for v in check(trace)]


@pytest.mark.parametrize("calls", [1, 3])
def test_a_happy_log_has_no_violation(calls: int) -> None:
    trace = happy(calls)
    assert trace.events[-1].label == "scoring.end"
    assert check(trace) == []


def test_upstream_5xx_retries_then_fail_without_finalize_is_no_violation() -> None:
    trace = FakeTrace().opened()
    for _ in range(3):  # the SDK retries; each attempt: preview, abandon, error record
        trace.preview().call(error="ProviderError")
    trace.stamp("agent.end")
    trace.errors, trace.is_completed = ["ProviderError"], True
    assert check(trace) == []


def test_agent_timeout_with_a_stale_preview_until_scoring_end_is_no_violation() -> None:
    trace = FakeTrace().opened().preview()
    trace.stamp("agent.end").stamp("finalize.start", notify=False)
    trace.stamp("finalize.end", "scoring.start")
    trace._pending.clear()  # abandon() just before scoring.end, silently
    trace.stamp("scoring.end")
    trace.ok = trace.is_completed = True
    assert [e.pending for e in trace.events][-4:] == [2, 2, 2, 0]
    assert check(trace) == []


def test_a_failed_setup_closed_silently_by_verifiers_is_no_violation() -> None:
    trace = FakeTrace().stamp("boot.start").stamp("boot.end", "setup.start")
    trace.stamp("setup.end", notify=False)  # close()'s finally, after the last notify
    trace.errors, trace.is_completed = ["SetupError"], True
    assert check(trace) == []


def test_concurrent_requests_each_previewed_are_no_violation() -> None:
    trace = FakeTrace().opened().preview(0).preview(1).call(0).call(1)
    assert [e.pending for e in trace.events][-4:] == [2, 4, 2, 0]
    assert check(trace.closed()) == []


def test_no_notify_is_empty() -> None:
    (violation,) = lifecycle_violations([], FakeTrace())
    assert violation.rule == "lifecycle.empty" and violation.event is None


def test_a_boundary_notified_before_an_earlier_one_is_out_of_order() -> None:
    trace = FakeTrace().stamp("boot.start").stamp("setup.start").stamp("boot.end")
    order = [v for v in check(trace) if v.rule == "lifecycle.order"]
    assert len(order) == 1
    assert order[0].event == 2
    assert "expected boot.end before setup.start" in order[0].message
    assert "event 1 ('setup.start')" in order[0].message
    assert "event 2 ('boot.end')" in order[0].message


def test_boundaries_in_one_notify_are_in_order() -> None:
    trace = FakeTrace().stamp("boot.start", "boot.end", "setup.start")
    assert "lifecycle.order" not in rules(trace)


def test_an_end_without_its_start_is_a_stage_violation() -> None:
    trace = FakeTrace().opened().stamp("finalize.end")
    (violation,) = [v for v in check(trace) if v.rule == "lifecycle.stage"]
    assert violation.event == 3
    assert "finalize.end=" in violation.message and "finalize.start=unset" in violation.message


def test_an_end_before_its_start_on_the_final_timing_is_a_stage_violation() -> None:
    trace = happy()
    trace.timing.scoring.end = trace.timing.scoring.start - 1.0
    found = {v.rule: v for v in check(trace)}
    assert found["lifecycle.stage"].event is None
    assert "final trace timing" in found["lifecycle.stage"].message
    assert "lifecycle.restamped" in found  # changed after the last notify, too


def test_boundary_timestamps_out_of_stage_order_are_a_clock_violation() -> None:
    trace = happy()
    trace.timing.finalize.start = trace.timing.agent.end - 0.5
    (violation,) = [v for v in check(trace) if v.rule == "lifecycle.clock"]
    assert violation.event is None
    assert "observed finalize.start=" in violation.message
    assert "before agent.end=" in violation.message


def test_a_notify_time_going_back_is_a_clock_violation() -> None:
    events = happy().events
    events[4] = dataclasses.replace(events[4], t=events[3].t - 1.0)
    found = [v for v in lifecycle_violations(events, happy()) if v.rule == "lifecycle.clock"]
    assert [v.event for v in found] == [4]
    assert "event 4 ('call #1 ok')" in found[0].message


def test_a_stage_stamp_changed_in_a_later_notify_is_restamped() -> None:
    trace = FakeTrace().opened()
    trace.timing.boot.start += 0.5
    trace.preview()
    (violation,) = [v for v in check(trace) if v.rule == "lifecycle.restamped"]
    assert violation.event == 3
    assert "boot.start to keep" in violation.message and "event 0" in violation.message


def test_a_stage_stamp_changed_after_the_last_notify_is_restamped() -> None:
    trace = happy()
    trace.timing.agent.end += 0.25
    (violation,) = [v for v in check(trace) if v.rule == "lifecycle.restamped"]
    assert violation.event is None and "after the last notify" in violation.message


def test_a_boundary_stamped_after_the_last_notify_is_missing() -> None:
    trace = FakeTrace().opened().preview().call().stamp("agent.end")
    trace.stamp("finalize.start", notify=False).stamp("finalize.end", "scoring.start")
    trace.stamp("scoring.end", notify=False)
    trace.ok = trace.is_completed = True
    (violation,) = check(trace)
    assert violation.rule == "lifecycle.missing"
    assert "after stamping scoring.end" in violation.message
    assert "last: event 6 ('finalize.start+finalize.end+scoring.start')" in violation.message


def test_an_ok_trace_that_skips_scoring_is_missing_both_boundaries() -> None:
    trace = FakeTrace().opened().preview().call().stamp("agent.end")
    trace.ok = trace.is_completed = True
    found = [v.message for v in check(trace) if v.rule == "lifecycle.missing"]
    assert len(found) == 4
    assert all("completed ok" in m for m in found)
    assert any("scoring.end never stamped" in m for m in found)


def test_a_failed_trace_must_still_end_its_agent_stage() -> None:
    trace = FakeTrace().opened().preview().call(error="ProviderError")
    trace.errors = ["ProviderError"]
    (violation,) = check(trace)
    assert violation.rule == "lifecycle.missing"
    assert "started agent stage to end" in violation.message
    assert "never completed" in violation.message


def test_a_call_without_its_preview_is_a_preview_violation() -> None:
    trace = FakeTrace().opened().preview().call().call()
    (violation,) = [v for v in check(trace.closed()) if v.rule == "lifecycle.preview"]
    assert violation.event == 5
    assert "before model call #2" in violation.message
    assert "from event 4 ('call #1 ok') to event 5 ('call #2 ok')" in violation.message


def test_a_preview_before_agent_start_is_a_preview_violation() -> None:
    trace = FakeTrace().stamp("boot.start").preview().call()
    trace.stamp("boot.end", "setup.start").stamp("setup.end", "agent.start")
    found = [v for v in check(trace.closed()) if v.rule == "lifecycle.preview"]
    assert [v.event for v in found] == [1]
    assert "only after agent.start" in found[0].message


def test_a_new_preview_after_agent_end_is_a_preview_violation() -> None:
    trace = FakeTrace().opened().preview().call().stamp("agent.end").preview()
    trace.call()
    trace.stamp("finalize.start", notify=False)
    trace.stamp("finalize.end", "scoring.start").stamp("scoring.end")
    trace.ok = trace.is_completed = True
    found = [v for v in check(trace) if v.rule == "lifecycle.preview"]
    assert [v.event for v in found] == [6]
    assert "pending 0 -> 2" in found[0].message


def test_a_preview_left_at_the_last_notify_is_a_preview_violation() -> None:
    """The caller-cancel path: `abandon()` clears the preview but nothing notifies."""
    trace = FakeTrace().opened().preview()
    trace._pending.clear()
    found = [v for v in check(trace) if v.rule == "lifecycle.preview"]
    assert [v.event for v in found] == [3]
    assert "pending=2 at event 3 ('preview')" in found[0].message


def test_messages_left_on_the_trace_are_a_preview_violation() -> None:
    trace = happy()
    trace._pending[7] = ["stale"]
    (violation,) = check(trace)
    assert violation.rule == "lifecycle.preview" and violation.event is None
    assert "trace.pending == []" in violation.message and "1 previewed" in violation.message


def test_rules_and_boundaries_are_catalogued() -> None:
    assert len(BOUNDARIES) == 10 and BOUNDARIES[0] == "boot.start"
    assert {v.rule for v in check(FakeTrace().opened().preview().call())} <= set(RULES)


def test_describe_log_numbers_every_event_and_marks_some() -> None:
    table = describe_log(happy().events, mark={4})
    lines = table.splitlines()
    assert "label" in lines[0] and "pending" in lines[0]
    assert len(lines) == 9
    assert lines[5].startswith(">   4  call #1 ok")
    assert lines[1].rstrip().endswith("+0.000s")
    assert describe_log([]) == "(no notify)"
