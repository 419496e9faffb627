"""Name the hook that stalls the check worker, before the supervisor kills it.

A hook that blocks the event loop (a sync `time.sleep`, a blocking HTTP or subprocess call
in an async reward) cannot be stopped by an asyncio deadline, and one that swallows
`CancelledError` outlives every deadline; either way the supervisor must kill the worker.
Killing it says nothing about *where* env code was stuck, so the worker watches itself:

- a heartbeat coroutine stamps the loop every `TICK` seconds; a watchdog thread that sees
  no stamp for `stall_after` seconds reads the loop thread's frames
  (`sys._current_frames()`) — they end in the blocking call;
- an asyncio task still running env code `CANCEL_GRACE` seconds after it was cancelled
  (`Task.cancelling()`: by a unit's deadline, verifiers' own timeouts, a `gather`) is read
  from its coroutine chain (`cr_await`), which the heartbeat scans every `SCAN_EVERY`
  seconds (of several, the one in the most specific hook: `culprit_rank`). Cancellation
  reaches a hook through tasks vfcheck does not own (a memoised play behind
  `asyncio.shield`, verifiers' rollout timeout), so the unit's own deadline alone would see
  a swallowed `CancelledError` late, or never.

Either way the innermost frame of env code (not vfcheck, verifiers, the standard library
or site-packages, unless it is the env's own package) names the function, file and line,
the enclosing hook (`reward 'slow_grade'`, `VfcTask.setup`, `tool 'add'`) names the stage
it blocks (`vfcheck.checks._registry.Stage`), and a `stalled` event goes to the event log.
Which unit is stuck comes from a task factory that remembers the unit (`CURRENT_UNIT`)
each asyncio task was created under.

The env's own frames are what vfcheck reports; a stall in vfcheck's or verifiers' own code
is left to the supervisor's hard deadlines.
"""

from __future__ import annotations

import asyncio
import contextvars
import sys
import threading
import time
import weakref
from collections.abc import Callable, Coroutine, Iterable
from types import FrameType
from typing import Any

from vfcheck._host.env_code import (
    EnvCode,
    HookKinds,
    awaited_frames,
    called_at,
    display_path,
    frames_of,
    hook_of,
    hook_rank,
)
from vfcheck._isolation.events import Stall, Unit

TICK = 0.2
"""Seconds between heartbeats of the loop."""
CANCEL_GRACE = 3.0
"""Seconds a cancelled task may go on running env code (cleanup) before it counts as
ignoring the cancellation."""
SCAN_EVERY = 1.0
"""Seconds between the heartbeat's scans for tasks that ignore their cancellation."""
MIN_STALL = 10.0
"""The fewest seconds without a heartbeat that count as a blocked loop (a loaded machine
can starve a process for a second or two; nothing in a check holds the loop for ten)."""
STACK_LINES = 12

CURRENT_UNIT: contextvars.ContextVar[Unit | None] = contextvars.ContextVar(
    "vfcheck_unit", default=None)
"""The unit whose code runs here: the worker sets it around each unit's task; asyncio
tasks created below inherit it."""

def find_stall(frames: list[FrameType], env_code: EnvCode, kinds: HookKinds, how: str,
               unit: Unit | None, seconds: float) -> Stall | None:
    """The stall `frames` (outermost first) show, if env code is among them."""
    env_frames = [f for f in frames if f.f_code.co_filename in env_code]
    if not env_frames:
        return None
    innermost = env_frames[-1]
    hook = next((found for f in reversed(env_frames)
                 if (found := hook_of(f, kinds)) is not None), None)
    index = hook[2] if hook is not None and hook[2] is not None else (
        unit[1] if unit is not None else None)
    start = max(0, len(frames) - STACK_LINES)
    stack = [f"{display_path(f.f_code.co_filename)}:{f.f_lineno} in {f.f_code.co_name}"
             for f in frames[start:]]
    return Stall(
        how=how, unit=unit, index=index, hook=hook[0] if hook else None,
        stage=hook[1] if hook else None, function=innermost.f_code.co_name,
        at=f"{display_path(innermost.f_code.co_filename)}:{innermost.f_lineno}",
        call=called_at(innermost), seconds=round(seconds, 1), stack=stack)


def culprit_rank(stall: Stall) -> int:
    """Which of several tasks still running after their cancellation to name: a cancelled
    `Task.validate` or `Task.score` goes on running while the reward task it awaits does,
    and `asyncio.all_tasks()` is a set, so either came first. The decorated hook (a reward,
    a tool) is the one that ignores the cancellation; then a judge or a harness; then a
    Task's own lifecycle method; then env code in no hook."""
    return hook_rank(stall.hook)


class Watchdog:
    """Watches one worker's event loop; `emit(stall)` writes what it finds."""

    def __init__(self, emit: Callable[[Stall], None], stall_after: float, *,
                 floor: float = MIN_STALL) -> None:
        self.emit = emit
        self.stall_after = max(stall_after, floor)
        """Seconds without a heartbeat that count as a blocked loop: the per-step timeout
        (a hook holding the loop that long breaks every check's contract), at least
        `floor`."""
        self.env_code = EnvCode()
        self.kinds = HookKinds()
        self.owners: weakref.WeakKeyDictionary[asyncio.Task[Any], Unit] = (
            weakref.WeakKeyDictionary())
        self._tick = time.monotonic()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = threading.get_ident()
        self._closed = threading.Event()
        self._beat: asyncio.Task[None] | None = None
        self._cancelled_at: dict[asyncio.Task[Any], float] = {}
        """Pending tasks seen cancelled, and since when (rebuilt on every scan)."""
        self._reported = False
        """A stall was reported: the supervisor kills this worker on the first."""

    def install(self) -> None:
        """From the loop's thread: the task factory, the heartbeat, the watching thread."""
        self._loop = loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        loop.set_task_factory(self._task)  # type: ignore[arg-type]
        self._beat = loop.create_task(self._heartbeat())
        threading.Thread(target=self._watch, name="vfcheck-watchdog", daemon=True).start()

    def know_env(self, modules: Iterable[str]) -> None:
        """The env's modules, once loaded: their package is env code wherever it lives."""
        self.env_code = EnvCode(modules)
        self.kinds = HookKinds.of_verifiers()

    def close(self) -> None:
        self._closed.set()
        if self._beat is not None:
            self._beat.cancel()

    def _task(self, loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any],
              **kwargs: Any) -> asyncio.Task[Any]:
        task = asyncio.Task(coro, loop=loop, **kwargs)
        if (unit := CURRENT_UNIT.get()) is not None:
            self.owners[task] = unit
        return task

    async def _heartbeat(self) -> None:
        next_scan = 0.0
        while True:
            self._tick = now = time.monotonic()
            if now >= next_scan and not self._reported:
                next_scan = now + SCAN_EVERY
                self._scan(now)
            await asyncio.sleep(TICK)

    def _scan(self, now: float) -> None:
        """Report the first task that went on running env code `CANCEL_GRACE` seconds
        after it was cancelled (one with a hook frame, if several)."""
        seen: dict[asyncio.Task[Any], float] = {}
        found: list[Stall] = []
        for task in asyncio.all_tasks():
            if task.done() or not task.cancelling():
                continue
            seen[task] = since = self._cancelled_at.get(task, now)
            if now - since >= CANCEL_GRACE and (stall := find_stall(
                    awaited_frames(task), self.env_code, self.kinds, "ignored cancellation",
                    self.owners.get(task), now - since)) is not None:
                found.append(stall)
        self._cancelled_at = seen
        if found:
            self._reported = True
            self.emit(min(found, key=culprit_rank))

    def _watch(self) -> None:
        while not self._closed.wait(TICK):
            quiet = time.monotonic() - self._tick
            if quiet < self.stall_after or self._reported:
                continue
            current = asyncio.current_task(self._loop) if self._loop is not None else None
            unit = self.owners.get(current) if current is not None else None
            frame = sys._current_frames().get(self._loop_thread)
            stall = find_stall(frames_of(frame), self.env_code, self.kinds, "blocked", unit,
                               quiet)
            if stall is not None:  # else vfcheck's or verifiers' own: the deadlines decide
                self._reported = True
                self.emit(stall)


def env_modules(ctx: Any) -> list[str]:
    """The modules of the env's own classes: its taskset, tasks and env."""
    objects = [ctx.env, getattr(ctx.env, "taskset", None), *ctx.tasks[:1]]
    return sorted({type(o).__module__ for o in objects if o is not None})


