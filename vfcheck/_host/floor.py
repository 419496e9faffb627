"""The run's floor: a confirmation runs alone on it, across the run's worker processes.

A unit whose work hit a deadline runs again before its failure is reported
(`vfcheck._host.attempts`), alone: nothing else in flight in its worker, and the
front-end run's other workers paused. Every worker of one run shares the run dir, and two
`flock`s on files there carry the floor from process to process:

- `floor.gate`: held exclusively by the worker that wants the floor alone; the others look
  whether they could take it shared (letting go at once) before they start an episode or
  a check, and wait while they cannot;
- `floor.busy`: held shared by a worker while it has work in flight, exclusively by the
  worker alone on the floor, which so waits for the others' work in flight to end.

Locks are polled without blocking (the event loop goes on, and a cancelled waiter leaves no
lock behind); the kernel drops a dead process's locks, so a worker killed while alone frees
the floor. Waiting at the floor counts as queue time (`vfcheck._host.queue_clock`): a
paused check's deadline does not run.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # not POSIX: no floor, every unit runs as it comes
    fcntl = None  # type: ignore[assignment]

POLL = 0.02
"""Seconds between two tries of a lock someone else holds."""


class Floor:
    """One worker's side of its run's floor (`open` it on the run dir first; unopened, it
    lets everything through)."""

    def __init__(self) -> None:
        self._gate: int | None = None
        self._busy: int | None = None
        self._in_flight = 0
        self._holding = False
        self._taking = asyncio.Lock()
        self._alone = asyncio.Lock()
        """One confirmation at a time in this process (a lock of one open file is the
        process's: a second `flock` of it would pass)."""
        self.alone_here = False
        """This process holds the floor alone: its own work passes, and is all that runs."""

    def open(self, run_dir: Path) -> None:
        if fcntl is None:
            return
        self._gate = os.open(run_dir / "floor.gate", os.O_RDWR | os.O_CREAT, 0o644)
        self._busy = os.open(run_dir / "floor.busy", os.O_RDWR | os.O_CREAT, 0o644)

    @contextlib.asynccontextmanager
    async def shared(self) -> AsyncIterator[None]:
        """Hold the floor with the run's other workers for one episode or check: wait while
        one of them wants it alone."""
        if self._gate is None or self._busy is None or self.alone_here:
            yield
            return
        async with self._taking:
            while not _try(self._gate, fcntl.LOCK_SH):
                await asyncio.sleep(POLL)
            fcntl.flock(self._gate, fcntl.LOCK_UN)
            if not self._holding:
                await _take(self._busy, fcntl.LOCK_SH)
                self._holding = True
            self._in_flight += 1
        try:
            yield
        finally:
            self._in_flight -= 1
            if self._in_flight == 0 and self._holding:
                fcntl.flock(self._busy, fcntl.LOCK_UN)
                self._holding = False

    @contextlib.asynccontextmanager
    async def alone(self) -> AsyncIterator[None]:
        """Hold the floor alone: the other workers start nothing new, and their work in
        flight ends first. This worker's own work must be done (none is waited for)."""
        if self._gate is None or self._busy is None:
            yield
            return
        async with self._alone:
            async with self._held_alone():
                yield

    @contextlib.asynccontextmanager
    async def _held_alone(self) -> AsyncIterator[None]:
        assert self._gate is not None and self._busy is not None
        await _take(self._gate, fcntl.LOCK_EX)
        try:
            while self._in_flight:  # this worker's own shared holds (none, as a rule)
                await asyncio.sleep(POLL)
            if self._holding:
                fcntl.flock(self._busy, fcntl.LOCK_UN)
                self._holding = False
            await _take(self._busy, fcntl.LOCK_EX)
            self.alone_here = True
            try:
                yield
            finally:
                self.alone_here = False
                fcntl.flock(self._busy, fcntl.LOCK_UN)
        finally:
            fcntl.flock(self._gate, fcntl.LOCK_UN)


def _try(fd: int, kind: int) -> bool:
    try:
        fcntl.flock(fd, kind | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


async def _take(fd: int, kind: int) -> None:
    while not _try(fd, kind):
        await asyncio.sleep(POLL)


FLOOR = Floor()
"""The worker's one floor: its episodes and checks hold it shared, its confirmations alone."""
