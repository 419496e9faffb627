"""Lifecycle rules for one trace's notify log: pure analysis, no env, no pytest.

A watcher (`vf-eval`'s live view, a trainer's progress UI) only sees a trace through
`Trace.notify()`. These rules say what such a watcher may rely on, measured against
verifiers 0.4.0 (`rollout.py` stamps `trace.timing` and notifies; `interception/server.py`
previews each request and records each call):

    boot.start; boot.end+setup.start; setup.end+agent.start;
    per model request: preview (pending > 0), then `call #k` (pending back to 0);
    agent.end; finalize.start+finalize.end+scoring.start; scoring.end

`finalize.start` is stamped without a notify (`rollout.py` `close()`), so the recorder
reports it together with `finalize.end+scoring.start`; that is in order and not a miss.

Two 0.4.0 behaviours are the library's, not the env's, and are left to the `preview` family
and the library suite: after an agent timeout the `agent.end` (and finalize) notify still
shows the hung request's stale preview until `abandon()` just before `scoring.end`; and on a
failed rollout `close()` closes its open spans in a `finally` without notifying. Here a stale
preview may only shrink after `agent.end`, and a failed trace's unnotified stamps are not
blamed. A preview still showing at the last notify is always a violation.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from vfcheck._episodes.recorder import STAGES, NotifyEvent, stage_times
from vfcheck._shared.findings import Finding, Outcome
from vfcheck.checks._context import CheckContext
from vfcheck.checks._lab import dead_server_block, episode_lab
from vfcheck.checks._registry import check, family

family("lifecycle", order=70, summary="the notify log follows boot → setup → agent → finalize → "
       "scoring.")

BOUNDARIES: tuple[str, ...] = tuple(
    f"{stage}.{edge}" for stage in STAGES for edge in ("start", "end")
)
"""The ten stage boundaries in the order a happy episode stamps them."""
_RANK = {boundary: rank for rank, boundary in enumerate(BOUNDARIES)}
_OPENING_STAGES = ("boot", "setup", "agent")
"""Stages a failed trace must still close once started (verifiers skips only finalize and
scoring after a failure, `rollout.py` `close()`)."""

RULES: dict[str, str] = {
    "lifecycle.empty": "a minted trace notifies at least once",
    "lifecycle.order": "the ten stage boundaries first appear in stage order",
    "lifecycle.stage": "no stage ends before it starts",
    "lifecycle.clock": "boundary timestamps follow stage order; notify times never go back",
    "lifecycle.restamped": "a stage timestamp, once set, never changes",
    "lifecycle.missing": "every stamped boundary is notified; an ok trace stamps all ten",
    "lifecycle.preview": "each model call is previewed first, previews stay inside the agent "
    "stage, and none remains at the last notify",
}
"""Rule id -> the contract in one sentence (the check catalogue lists these)."""


@dataclass(frozen=True)
class Violation:
    """One broken lifecycle rule; `event` indexes the notify log (None: the final trace)."""

    rule: str
    message: str
    event: int | None


def lifecycle_violations(events: Sequence[NotifyEvent], trace: Any) -> list[Violation]:
    """Every lifecycle rule `events` (the notify log of `trace`) breaks, grouped by rule.

    `trace` is the live `verifiers.v1.Trace` after its episode: its final `timing`, `ok`,
    `errors` and `pending` are compared with what the notifies showed."""
    if not events:
        return [
            Violation(
                "lifecycle.empty",
                "expected at least one Trace.notify() for a minted trace (boot.start comes "
                "first); observed none",
                None,
            )
        ]
    final = stage_times(trace)
    log = _Log(events)
    return [
        *_order(log),
        *_stage(log, final),
        *_clock(log, final),
        *_restamped(log, final),
        *_missing(log, final, trace),
        *_preview(log, trace),
    ]


def describe_log(events: Sequence[NotifyEvent], mark: Collection[int] = ()) -> str:
    """The log as a numbered table for failure messages; events in `mark` get a `>`."""
    if not events:
        return "(no notify)"
    t0 = events[0].t
    width = max(5, *(len(e.label) for e in events))
    lines = [f"    #  {'label':<{width}}  pending  calls  turns         t"]
    for i, e in enumerate(events):
        flag = ">" if i in mark else " "
        lines.append(
            f"{flag}{i:>4}  {e.label:<{width}}  {e.pending:>7}  {e.calls:>5}  {e.turns:>5}"
            f"  {e.t - t0:>+8.3f}s"
        )
    return "\n".join(lines)


class _Log:
    """The events plus the helpers every rule uses to cite them."""

    def __init__(self, events: Sequence[NotifyEvent]) -> None:
        self.events = events
        self.t0 = events[0].t

    def at(self, index: int) -> str:
        return f"event {index} ({self.events[index].label!r})"

    def when(self, stamp: float) -> str:
        """A timestamp relative to the first notify: epoch floats are unreadable."""
        return f"{stamp - self.t0:+.3f}s" if stamp else "unset"

    def stamp(self, index: int, boundary: str) -> float:
        return _stamp(self.events[index].stages, boundary)


def _stamp(stages: dict[str, tuple[float, float]], boundary: str) -> float:
    stage, edge = boundary.split(".")
    start, end = stages.get(stage, (0.0, 0.0))
    return start if edge == "start" else end


def _order(log: _Log) -> Iterator[Violation]:
    first_seen: dict[str, int] = {}
    for i, e in enumerate(log.events):
        for boundary in e.boundaries:
            if boundary in _RANK:
                first_seen.setdefault(boundary, i)
    latest: tuple[str, int] | None = None
    # Within one notify the recorder lists boundaries in stage order, so walking the
    # first appearances in log order only finds real inversions.
    for boundary, i in first_seen.items():
        if latest is not None and _RANK[boundary] < _RANK[latest[0]]:
            yield Violation(
                "lifecycle.order",
                f"expected {boundary} before {latest[0]}; observed {latest[0]} first at "
                f"{log.at(latest[1])} and {boundary} only at {log.at(i)}",
                i,
            )
        elif latest is None or _RANK[boundary] > _RANK[latest[0]]:
            latest = (boundary, i)


def _ends_early(start: float, end: float) -> bool:
    return bool(end) and (not start or end < start)


def _stage(log: _Log, final: dict[str, tuple[float, float]]) -> Iterator[Violation]:
    for stage in STAGES:
        seen = next(
            (i for i, e in enumerate(log.events) if _ends_early(*e.stages.get(stage, (0, 0)))),
            None,
        )
        if seen is not None:
            start, end = log.events[seen].stages[stage]
            where = f"at {log.at(seen)}"
        elif _ends_early(*final[stage]):
            start, end = final[stage]
            where = "on the final trace timing"
        else:
            continue
        yield Violation(
            "lifecycle.stage",
            f"expected {stage}.start to be stamped no later than {stage}.end; observed "
            f"{stage}.end={log.when(end)} with {stage}.start={log.when(start)} {where}",
            seen,
        )


def _clock(log: _Log, final: dict[str, tuple[float, float]]) -> Iterator[Violation]:
    latest: tuple[str, float] | None = None  # the latest stamp of the earlier stages
    for stage in STAGES:
        start, end = final[stage]
        # end < start within one stage is `lifecycle.stage`'s to report.
        for boundary, stamp in ((f"{stage}.start", start), (f"{stage}.end", end)):
            if stamp and latest is not None and stamp < latest[1]:
                yield Violation(
                    "lifecycle.clock",
                    f"expected boundary timestamps in stage order; observed {boundary}="
                    f"{log.when(stamp)} before {latest[0]}={log.when(latest[1])} on the "
                    "final trace timing",
                    None,
                )
        for boundary, stamp in ((f"{stage}.start", start), (f"{stage}.end", end)):
            if stamp and (latest is None or stamp > latest[1]):
                latest = (boundary, stamp)
    for i in range(1, len(log.events)):
        if log.events[i].t < log.events[i - 1].t:
            yield Violation(
                "lifecycle.clock",
                f"expected notify times never to go back; observed {log.at(i)} at "
                f"{log.when(log.events[i].t)} after {log.at(i - 1)} at "
                f"{log.when(log.events[i - 1].t)}",
                i,
            )


def _restamped(log: _Log, final: dict[str, tuple[float, float]]) -> Iterator[Violation]:
    for boundary in BOUNDARIES:
        first: tuple[int, float] | None = None
        changed: int | None = None
        for i in range(len(log.events)):
            stamp = log.stamp(i, boundary)
            if first is None:
                if stamp:
                    first = (i, stamp)
            elif stamp != first[1]:
                changed = i
                break
        if first is None:
            continue
        expected = (
            f"expected {boundary} to keep {log.when(first[1])}, stamped at {log.at(first[0])}"
        )
        if changed is not None:
            yield Violation(
                "lifecycle.restamped",
                f"{expected}; observed {log.when(log.stamp(changed, boundary))} at "
                f"{log.at(changed)}",
                changed,
            )
        elif _stamp(final, boundary) != first[1]:
            yield Violation(
                "lifecycle.restamped",
                f"{expected}; observed {log.when(_stamp(final, boundary))} on the final trace "
                "timing (changed after the last notify)",
                None,
            )


def _failed(trace: Any) -> bool:
    return not trace.ok or bool(trace.errors)


def _missing(
    log: _Log, final: dict[str, tuple[float, float]], trace: Any
) -> Iterator[Violation]:
    # The recorder credits a silent stamp to the next notify (as with verifiers' own
    # `finalize.start`), so only a stamp after the last notify shows as unnotified.
    shown = {boundary for e in log.events for boundary in e.boundaries}
    failed = _failed(trace)
    last = len(log.events) - 1
    for boundary in BOUNDARIES:
        stamp = _stamp(final, boundary)
        if not stamp or boundary in shown or failed:
            # A failed rollout's open spans are closed silently by verifiers
            # (`rollout.py` `close()`, its `finally`): not the env's doing.
            continue
        yield Violation(
            "lifecycle.missing",
            f"expected a Trace.notify() after stamping {boundary}; observed {boundary}="
            f"{log.when(stamp)} on the final trace but in no notify (last: {log.at(last)})",
            None,
        )
    if not failed:
        for boundary in BOUNDARIES:
            if not _stamp(final, boundary):
                yield Violation(
                    "lifecycle.missing",
                    f"expected all ten boundaries on a trace that completed ok; observed "
                    f"{boundary} never stamped (log ends at {log.at(last)})",
                    None,
                )
        return
    # A cancelled rollout never completes: verifiers' `abort()` (agent.py) stamps no end.
    unfinished = "" if getattr(trace, "is_completed", True) else " (the trace never completed)"
    for stage in _OPENING_STAGES:
        start, end = final[stage]
        if start and not end:
            yield Violation(
                "lifecycle.missing",
                f"expected a started {stage} stage to end even on a failed trace (only "
                f"finalize and scoring may be skipped); observed {stage}.start="
                f"{log.when(start)} and no {stage}.end{unfinished}",
                None,
            )


def _preview(log: _Log, trace: Any) -> Iterator[Violation]:
    previous_call: int | None = None
    previewed = False  # a preview showed since the previous call event
    calls = pending = 0
    for i, e in enumerate(log.events):
        agent_start, agent_end = e.stages.get("agent", (0.0, 0.0))
        if e.calls > calls:
            if not previewed:
                since = "the first notify" if previous_call is None else log.at(previous_call)
                yield Violation(
                    "lifecycle.preview",
                    f"expected a preview notify (pending > 0) before model call #{e.calls}; "
                    f"observed none from {since} to {log.at(i)}",
                    i,
                )
            previous_call = i
            # A concurrent request's preview may still show on this call's notify.
            previewed = e.pending > 0
        elif e.pending > 0:
            previewed = True
        if e.pending > 0 and not agent_start:
            yield Violation(
                "lifecycle.preview",
                f"expected previews only after agent.start; observed pending={e.pending} at "
                f"{log.at(i)}",
                i,
            )
        elif agent_end and e.pending > pending:
            # A stale preview may linger past agent.end (0.4.0, see module doc); a new one
            # shows as growth.
            yield Violation(
                "lifecycle.preview",
                f"expected no new preview after agent.end; observed pending {pending} -> "
                f"{e.pending} at {log.at(i)}",
                i,
            )
        calls, pending = max(calls, e.calls), e.pending
    last = len(log.events) - 1
    if pending:
        yield Violation(
            "lifecycle.preview",
            f"expected no previewed messages at the last notify; observed pending={pending} at "
            f"{log.at(last)}, which a watcher keeps showing for good",
            last,
        )
    left = len(trace.pending)
    if left:
        yield Violation(
            "lifecycle.preview",
            f"expected trace.pending == [] after the episode; observed {left} previewed "
            f"message(s) still on the trace (last notify: {log.at(last)})",
            None,
        )


@check(
    "lifecycle", family="lifecycle", scope="sample", budget=2.5,
    contract="the trace notifies boot -> setup -> agent -> (preview, call recorded)* -> finalize "
    "-> scoring, each boundary once, with clocks that never go back",
    fails_when="the notify log breaks boot → setup → agent → (preview, call recorded)* → finalize "
    "→ scoring: rules `lifecycle.order`, `.stage`, `.clock`, `.restamped`, `.missing`, "
    "`.preview`, `.empty`",
    why="dashboards, trainers and resume read traces through these notifies",
)
async def lifecycle(ctx: CheckContext, task: Any) -> Finding:
    result = await (await episode_lab(ctx)).first_play(task)
    if (blocked := dead_server_block([result], task.data.idx)) is not None:
        return ctx.finding("lifecycle", task, "skipped", blocked)
    return lifecycle_finding(ctx, task, result)


def lifecycle_finding(ctx: CheckContext, task: Any, result: Any) -> Finding:
    def finding(outcome: Outcome, observed: str, **details: Any) -> Finding:
        return ctx.finding("lifecycle", task, outcome, observed, **details)

    violations = []
    logs = []
    for log in result.logs:
        for v in lifecycle_violations(log.events, log.trace):
            violations.append(v)
        logs.append(describe_log(log.events))
    details = {
        "violations": [{"rule": v.rule, "message": v.message, "event": v.event}
                       for v in violations],
        "notify_log": logs,
    }
    if result.runner_error and not result.logs:
        return finding("failed",
                        f"no trace was minted ({result.runner_error})", **details)
    if violations:
        first = violations[0]
        observed = f"[{first.rule}] {first.message}" + (
            f" (+{len(violations) - 1} more)" if len(violations) > 1 else ""
        )
        return finding("failed",
                        observed + "\nnotify log:\n" + "\n".join(logs), **details)
    return finding("passed",
                    f"{sum(len(log.events) for log in result.logs)} notifies in order", **details)
