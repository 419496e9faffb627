"""Watch every minted trace and log each `Trace.notify()` with the state at that moment.

verifiers calls `Trace.notify()` at each phase boundary (boot, setup, agent, finalize,
scoring start/end), at each request preview (`Trace.preview`) and at each committed turn.
`Trace.watch` holds ONE callback (`trace._on_change`, `verifiers/v1/trace.py`), so the
recorder chains whatever was there before instead of replacing it. `on_trace` fires at
mint, before boot, so the recorder sees every notify of the trace.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

STAGES = ("boot", "setup", "agent", "finalize", "scoring")
"""The trace's timing spans, in the order a happy episode walks them."""


@dataclass(frozen=True)
class NotifyEvent:
    """One `Trace.notify()`: what changed (`label`) and the trace's state then."""

    label: str
    """`boot.start`, `setup.end+agent.start`, `preview`, `call #2 ok`, `call #1 error=..`,
    or `other` when nothing the recorder tracks changed."""
    boundaries: tuple[str, ...]
    """Stage boundaries (`agent.start`) first seen at this notify, in stage order."""
    stages: dict[str, tuple[float, float]]
    """Each stage's (start, end) timestamps; 0.0 = not yet."""
    pending: int
    """`len(trace.pending)`: previewed, uncommitted messages."""
    calls: int
    """`len(trace.calls)`: model calls recorded so far."""
    turns: int
    t: float
    """Wall clock at the notify."""

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["boundaries"] = list(self.boundaries)
        data["stages"] = {k: list(v) for k, v in self.stages.items()}
        return data


@dataclass
class TraceLog:
    """The notify log of one trace, plus what the recorder knows of it."""

    trace: Any
    """The live `verifiers.v1.Trace`."""
    events: list[NotifyEvent] = field(default_factory=list)

    @property
    def labels(self) -> list[str]:
        return [e.label for e in self.events]


def stage_times(trace: Any) -> dict[str, tuple[float, float]]:
    timing = trace.timing
    return {name: (getattr(timing, name).start, getattr(timing, name).end) for name in STAGES}


class TraceRecorder:
    """Pass `recorder.on_trace` as `env.run_slot(..., on_trace=...)`.

    `on_mint` (optional) is called with each new trace first: the runner uses it to tell
    the scripted model which task a session id (the trace id) belongs to.
    """

    def __init__(self, on_mint: Callable[[Any], None] | None = None) -> None:
        self.logs: dict[str, TraceLog] = {}
        self._on_mint = on_mint

    def on_trace(self, trace: Any) -> None:
        if self._on_mint is not None:
            self._on_mint(trace)
        log = TraceLog(trace)
        self.logs[trace.id] = log
        previous = getattr(trace, "_on_change", None)
        last = {"stages": stage_times(trace), "calls": len(trace.calls)}

        def changed(t: Any) -> None:
            if previous is not None:
                previous(t)
            log.events.append(self._event(t, last))

        trace.watch(changed)

    @staticmethod
    def _event(trace: Any, last: dict[str, Any]) -> NotifyEvent:
        stages = stage_times(trace)
        before: dict[str, tuple[float, float]] = last["stages"]
        boundaries = tuple(
            f"{name}.{edge}"
            for name in STAGES
            for i, edge in enumerate(("start", "end"))
            if stages[name][i] and not before[name][i]
        )
        calls = len(trace.calls)
        pending = len(trace.pending)
        if boundaries:
            label = "+".join(boundaries)
        elif calls > last["calls"]:
            error = trace.calls[-1].error
            label = f"call #{calls} " + (f"error={error.type}" if error else "ok")
        elif pending:
            label = "preview"
        else:
            label = "other"
        last["stages"], last["calls"] = stages, calls
        return NotifyEvent(
            label=label,
            boundaries=boundaries,
            stages=stages,
            pending=pending,
            calls=calls,
            turns=trace.num_turns,
            t=time.time(),
        )
