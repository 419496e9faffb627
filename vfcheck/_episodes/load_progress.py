"""How far a load got when its deadline ran out: a slow load told from a hung one.

The `load` check loads in a thread, which nothing can stop from outside; at its deadline it
can only look at what the load did. A `load()` still yielding tasks at its own pace is slow,
not broken (a procedural taskset of 1000 tasks takes minutes): the deadline ran out on it,
and that says nothing of the env. A `load()` that yielded nothing, or stopped yielding,
may hang or never end. The watch also stops a load that is still yielding at its next task
once the deadline ran out, so that it does not run on beside the check run again alone.
"""

from __future__ import annotations

import asyncio
import linecache
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from types import FrameType
from typing import TypeVar

from vfcheck._host.env_code import EnvCode, awaited_frames, display_path, frames_of

T = TypeVar("T")

QUIET_FLOOR = 10.0
"""Seconds without a new task that a load may go quiet and still count as yielding, at
least: a machine under load stretches the pace of any generator."""
QUIET_PACE = 3.0
"""A load still counts as yielding when its last task came within this many times the
longest wait between two of its tasks (a generator whose tasks each take seconds)."""


class LoadStopped(Exception):
    """The load's deadline ran out: its thread stops at its next task."""


class LoadProgress:
    """What the load thread did, noted as it did it: when `load()` started being iterated,
    each task it yielded, and the thread itself (to see where it stands)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.iterating: float | None = None
        """When the tasks started being read: the env's modules and taskset were built."""
        self.yielded = 0
        self.last: float | None = None
        self.longest_gap = 0.0
        """The longest wait between two consecutive tasks (not before the first)."""
        self.thread: int | None = None
        self.stop = threading.Event()

    def begin(self) -> None:
        """Called in the load thread, first: the thread `where` looks at."""
        self.thread = threading.get_ident()

    def watch(self, tasks: Iterable[T]) -> Iterator[T]:
        """`tasks`, each noted as it comes; raises `LoadStopped` at the next one once the
        deadline ran out (`stop`)."""
        self.iterating = self.clock()
        for task in tasks:
            now = self.clock()
            if self.last is not None:
                self.longest_gap = max(self.longest_gap, now - self.last)
            self.yielded, self.last = self.yielded + 1, now
            if self.stop.is_set():
                raise LoadStopped
            yield task

    def still_yielding(self, now: float | None = None) -> bool:
        """The load yielded tasks and was still yielding them at `now`: its last task came
        within `QUIET_FLOOR`, or `QUIET_PACE` times its own longest wait between tasks."""
        if self.last is None:
            return False
        quiet = (self.clock() if now is None else now) - self.last
        return quiet <= max(QUIET_FLOOR, QUIET_PACE * self.longest_gap)

    def observed(self, now: float | None = None) -> str:
        """What the load had done by `now`, in the words of a finding: `load() was still
        yielding tasks: 12 in 40s, the last 0.2s before the deadline`, `load() yielded no
        task in 58s`, `load() yielded 5 task(s), then none for 50s`,
        `the env's module or taskset was still being built (load() not iterated yet)`."""
        now = self.clock() if now is None else now
        if self.iterating is None:
            return "the env's module or taskset was still being built (load() not iterated yet)"
        took = now - self.iterating
        if self.last is None:
            return f"load() yielded no task in {took:.0f}s"
        ago = now - self.last
        if self.still_yielding(now):
            return (f"load() was still yielding tasks: {self.yielded} in {took:.0f}s, the last "
                    f"{ago:.1f}s before the deadline")
        return f"load() yielded {self.yielded} task(s), then none for {ago:.0f}s"

    def where(self) -> str | None:
        """`VfcTaskset.load at my_env.py:30: `time.sleep(5)``: the innermost env-code frame
        the load thread stands in now, or that a coroutine awaits on an event loop the
        thread runs (a `load()` that calls `asyncio.run`); None when there is none (or the
        thread has ended)."""
        frame = sys._current_frames().get(self.thread) if self.thread is not None else None
        env_code = EnvCode()
        frames = frames_of(frame)
        env = [f for f in frames + awaited_on_loops(frames) if f.f_code.co_filename in env_code]
        if not env:
            return None
        code = env[-1].f_code
        line = linecache.getline(code.co_filename, env[-1].f_lineno).strip()
        name = getattr(code, "co_qualname", code.co_name)
        return (f"{name} at {display_path(code.co_filename)}:{env[-1].f_lineno}"
                + (f": `{line}`" if line else ""))


def awaited_frames_of_loop(loop: asyncio.AbstractEventLoop) -> list[FrameType]:
    """The coroutine chains of `loop`'s tasks, read from another thread: its task set may
    change meanwhile, then nothing is read."""
    try:
        tasks = list(asyncio.all_tasks(loop))
    except RuntimeError:  # the set changed size while it was read
        return []
    return [frame for task in tasks for frame in awaited_frames(task)]


def awaited_on_loops(frames: list[FrameType]) -> list[FrameType]:
    """The frames the tasks of an event loop running on `frames` (a thread's stack) await:
    the loop is the `self` of its `run_forever` frame."""
    for frame in frames:
        loop = frame.f_locals.get("self") if frame.f_code.co_name == "run_forever" else None
        if isinstance(loop, asyncio.AbstractEventLoop):
            return awaited_frames_of_loop(loop)
    return []
