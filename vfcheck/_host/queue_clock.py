"""Seconds work waited for a free episode slot: no deadline counts them.

A unit's deadline bounds its own work. While the episode lab's gate is full and episodes
wait for a slot, the units behind them make no progress through no fault of their own (a
2-core machine starting a tool server per episode, another task's hook using its episode
timeout to the end). So every deadline in flight is pushed back by the time some episode
waited at the gate: the worker's (`vfcheck._isolation.worker`) directly, the supervisor's
hard deadlines through the `queued` events the worker appends. Hung env code is still
caught: each episode has its own timeout inside its slot, and the watchdog reports a
blocked loop or an ignored cancellation whatever the deadlines say.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Iterator


class QueueClock:
    """Counts the seconds during which at least one episode waited at a gate."""

    def __init__(self) -> None:
        self._waiting = 0
        self._since: float | None = None
        self._total = 0.0

    def waited(self) -> float:
        """Seconds so far during which something waited for a slot."""
        if self._since is None:
            return self._total
        return self._total + time.monotonic() - self._since

    @contextlib.asynccontextmanager
    async def slot(self, gate: asyncio.Semaphore,
                   *held: contextlib.AbstractAsyncContextManager[None], slots: int = 1,
                   line: asyncio.Lock | None = None) -> AsyncIterator[None]:
        """Hold `slots` of `gate`'s slots, then each of `held` (the run's floor); the time
        spent waiting for them is counted. `line`: the gate's queue, taken while the slots
        are acquired, so that a taker of several is served before anyone who came later
        (asyncio's semaphore sends each of its acquisitions to the back)."""
        async with contextlib.AsyncExitStack() as stack:
            if line is not None:
                with self._counting() if line.locked() else contextlib.nullcontext():
                    await line.acquire()
            try:
                for _ in range(slots):
                    with self._counting() if gate.locked() else contextlib.nullcontext():
                        await gate.acquire()
                    stack.callback(gate.release)
            finally:
                if line is not None:
                    line.release()
            for hold in held:
                with self._counting():
                    await stack.enter_async_context(hold)
            yield

    @contextlib.contextmanager
    def _counting(self) -> Iterator[None]:
        self._waiting += 1
        if self._waiting == 1:
            self._since = time.monotonic()
        try:
            yield
        finally:
            self._waiting -= 1
            if self._waiting == 0 and self._since is not None:
                self._total += time.monotonic() - self._since
                self._since = None


QUEUE_CLOCK = QueueClock()
"""The worker's one clock: its episode lab waits on it, its deadlines read it."""
