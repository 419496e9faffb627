"""The event log of one env's check run: a JSONL file the worker appends to and every
reader (the supervisor, the CLI, each pytest-xdist worker) tails.

A file, not a pipe: several processes read the same run (`pytest -n 2` must not redo an
env's work per worker), and what was written survives an interrupt. Events:

- `hello` (worker pid, when its process `spawned`), `ready` (verifiers imported: its version)
- `plan` (tasks, the sampled indices, the harness tier per role)
- `start` / `finding` for each check unit (`check`, `index`)
- `queued`: seconds the worker's episodes have waited for a slot so far (`seconds`)
- `deferred`: a unit's failure came after a deadline; it runs again alone before it is
  reported (`vfcheck._host.attempts`), with a `start` of its own
- `stalled` (the worker's watchdog: env code blocked the loop or ignored a cancellation,
  and where; the supervisor kills the worker on it — see `Stall`)
- `starts`: how many processes the worker started warm and cold, and why cold
  (`vfcheck._host.warm_starts`)
- `done` (the worker finished), `final` (the supervisor finished: nothing more will come)
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from vfcheck._shared.findings import Finding

Unit = tuple[str, int | None]
"""A check on a task (`("gold", 1)`), or on the env (`("load", None)`)."""


@dataclass(frozen=True)
class Stall:
    """Where env code stalled the worker (`vfcheck._isolation.watchdog` finds it)."""

    how: str
    """`blocked` (the event loop) or `ignored cancellation`."""
    unit: Unit | None
    """The unit whose asyncio task was stuck, if known."""
    index: int | None
    """The task whose hook it is (the hook's own `self`, else the unit's)."""
    hook: str | None
    """`reward 'slow_grade'`, `VfcTask.setup`, `tool 'add'`; None: no hook frame found."""
    stage: str | None
    """The stage the hook belongs to (`vfcheck.checks._registry.Stage`); None: unknown."""
    function: str
    at: str
    """`file:line` of the innermost env-code frame."""
    call: str | None
    """What that line was calling or awaiting (`time.sleep`)."""
    seconds: float
    stack: list[str] = field(default_factory=list)

    @property
    def what(self) -> str:
        """`reward 'slow_grade' blocked the event loop at x.py:41 (time.sleep)`."""
        who = self.hook or f"env code ({self.function})"
        verb = "blocked the event loop" if self.how == "blocked" else "ignored cancellation"
        return f"{who} {verb} at {self.at}" + (f" ({self.call})" if self.call else "")

    def as_event(self) -> dict[str, Any]:
        return {"event": "stalled", "t": time.time(), **asdict(self)}

    @classmethod
    def from_event(cls, event: dict[str, Any]) -> Stall:
        unit = event.get("unit")
        return cls(
            how=event["how"], unit=(unit[0], unit[1]) if unit else None,
            index=event.get("index"), hook=event.get("hook"), stage=event.get("stage"),
            function=event.get("function") or "?", at=event.get("at") or "?",
            call=event.get("call"), seconds=float(event.get("seconds") or 0.0),
            stack=list(event.get("stack") or []))


def append_event(path: Path, event: dict[str, Any]) -> None:
    """Append one event as one `write()` on an O_APPEND file: readers never see half a
    line from this writer, and a killed writer leaves whole lines behind."""
    line = (json.dumps(event, default=str) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def merged_starts(seen: dict[str, Any], event: dict[str, Any]) -> dict[str, Any]:
    """Two `starts` summaries as one (a restarted worker reports its own): counts and
    seconds add up, the latest says what the warm interpreter was; `port_files`: verifiers'
    port files the workers removed (`vfcheck._host.port_files`)."""
    reasons = dict(seen.get("reasons") or {})
    for why, n in (event.get("reasons") or {}).items():
        reasons[why] = reasons.get(why, 0) + int(n)
    seconds = dict(seen.get("seconds") or {})
    for kind, s in (event.get("seconds") or {}).items():
        seconds[kind] = round(seconds.get(kind, 0.0) + float(s), 3)
    return {"warm": int(seen.get("warm") or 0) + int(event.get("warm") or 0),
            "cold": int(seen.get("cold") or 0) + int(event.get("cold") or 0),
            "reasons": reasons, "seconds": seconds,
            "zygote": str(event.get("zygote") or seen.get("zygote") or ""),
            "port_files": [*(seen.get("port_files") or []), *(event.get("port_files") or [])]}


@dataclass
class EventLog:
    """What is known so far of one run, read incrementally from its file."""

    path: Path
    offset: int = 0
    ready: dict[str, Any] | None = None
    plan: dict[str, Any] | None = None
    started: dict[Unit, tuple[float, float, float]] = field(default_factory=dict)
    """Unit -> (when this reader saw it start, its deadline in seconds, `queued` then)."""
    queued: float = 0.0
    """Seconds the current worker's episodes have waited for a slot (`queued` events):
    deadlines do not count them (`vfcheck._host.queue_clock`)."""
    findings: dict[Unit, Finding] = field(default_factory=dict)
    stall: Stall | None = None
    """What the current worker's watchdog reported stuck, if anything."""
    done: bool = False
    crash: str | None = None
    """What ended the worker's event loop, when env code's `BaseException` (`sys.exit()` in
    a hook) did: the units in flight then died with it."""
    final: bool = False
    worker_starts: int = 0
    """How many worker processes this run started (restarts after a stall add one each)."""
    starts: dict[str, Any] = field(default_factory=dict)
    """How the worker's processes started, warm or cold (`starts` events, summed)."""
    timeline: dict[str, Any] = field(default_factory=lambda: {"events": {}, "units": []})
    """When things happened, by the worker's clock (epoch seconds): the first worker's
    process start (`spawned`), `hello`, `ready`, `plan` and `done` (`events`), and each
    unit's `[check, index, start, end]` (`units`): the JSON report's `timeline`, JUnit's
    `time`, bench/profile.py's phases."""
    _began: dict[Unit, float] = field(default_factory=dict, repr=False, compare=False)
    _reading: threading.Lock = field(default_factory=threading.Lock, repr=False,
                                     compare=False)
    """One poll at a time: the supervisor's thread and the front end's both poll one log,
    and two reads from the same offset would each move it past the same chunk."""

    def poll(self) -> bool:
        """Read whatever was appended since the last poll; True if anything was."""
        with self._reading:
            try:
                with self.path.open("rb") as f:
                    f.seek(self.offset)
                    chunk = f.read()
            except FileNotFoundError:
                return False
            end = chunk.rfind(b"\n")
            if end < 0:
                return False
            self.offset += end + 1
            for raw in chunk[: end + 1].splitlines():
                if raw.strip():
                    self._apply(json.loads(raw))
            return True

    def _apply(self, event: dict[str, Any]) -> None:
        kind = event["event"]
        self._time(kind, event)
        if kind == "hello":
            self.done, self.stall, self.crash = False, None, None
            self.worker_starts += 1
            self.started.clear()  # a restarted worker: what was in flight was settled
            self.queued = 0.0
        elif kind == "ready":
            self.ready = event
        elif kind == "plan":
            self.plan = event
        elif kind == "start":
            unit = (event["check"], event["index"])
            self.started[unit] = (time.monotonic(), float(event.get("deadline") or 0.0),
                                  self.queued)
        elif kind == "deferred":  # it runs again alone later (`vfcheck._host.attempts`)
            self.started.pop((event["check"], event["index"]), None)
        elif kind == "queued":
            self.queued = float(event.get("seconds") or 0.0)
        elif kind == "finding":
            finding = Finding.from_dict(event["finding"])
            unit = (finding.check, finding.task.index if finding.task else None)
            self.findings[unit] = finding
            self.started.pop(unit, None)
        elif kind == "stalled":
            self.stall = Stall.from_event(event)
        elif kind == "starts":  # how its processes started (`vfcheck._host.warm_starts`)
            self.starts = merged_starts(self.starts, event)
        elif kind == "done":
            self.done = True
        elif kind == "crash":
            self.crash = str(event.get("error") or "")
        elif kind == "final":
            self.final = True

    def _time(self, kind: str, event: dict[str, Any]) -> None:
        at = event.get("t")
        if not isinstance(at, (int, float)):
            return
        if kind in ("hello", "prepared", "imported", "ready", "plan", "done"):
            self.timeline["events"].setdefault(kind, at)
            if kind == "hello" and isinstance(event.get("spawned"), (int, float)):
                self.timeline["events"].setdefault("spawned", event["spawned"])
        elif kind == "start":
            self._began[(event["check"], event["index"])] = at
        elif kind == "finding":
            task = event["finding"].get("task") or {}
            unit = (event["finding"].get("check"), task.get("index"))
            if (began := self._began.pop(unit, None)) is not None:
                self.timeline["units"].append([unit[0], unit[1], began, at])

    def in_flight(self) -> dict[Unit, tuple[float, float, float]]:
        return {u: t for u, t in self.started.items() if u not in self.findings}

    def overdue(self, grace: float) -> list[Unit]:
        """Units in flight past their deadline plus `grace`, not counting the seconds
        episodes waited for a slot since they started."""
        now = time.monotonic()
        return [u for u, (t0, deadline, queued) in self.in_flight().items()
                if deadline and now - t0 > deadline + grace + self.queued - queued]

    def wait(self, until: Any, timeout: float | None = None, interval: float = 0.05) -> bool:
        """Poll until `until(self)` holds or the run is final; True if it holds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            self.poll()
            if until(self):
                return True
            if self.final or (deadline is not None and time.monotonic() > deadline):
                return bool(until(self))
            time.sleep(interval)
