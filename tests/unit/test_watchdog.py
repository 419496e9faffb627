"""The worker's watchdog names where env code stalls the loop: the function, file:line and
the call it is stuck in, and the unit whose task it is. The functions below stand in for env
code (this file is neither vfcheck's, verifiers', the standard library's nor site-packages')."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from vfcheck._isolation.events import Stall
from vfcheck._isolation.watchdog import CANCEL_GRACE, CURRENT_UNIT, SCAN_EVERY, Watchdog

HOLD = asyncio.Event()


async def blocking_reward() -> None:
    time.sleep(1.5)  # the stall


async def swallowing_reward() -> None:
    while not HOLD.is_set():
        try:
            await asyncio.sleep(0.05)  # the stall
        except asyncio.CancelledError:
            pass


def line_of(function: object, text: str) -> int:
    code = function.__code__  # type: ignore[attr-defined]
    lines = Path(code.co_filename).read_text().splitlines()
    return next(i + 1 for i, line in enumerate(lines)
                if text in line and i + 1 > code.co_firstlineno)


async def test_a_blocked_loop_is_named_from_the_loop_threads_frames() -> None:
    stalls: list[Stall] = []
    dog = Watchdog(stalls.append, stall_after=0.5, floor=0.5)
    dog.install()
    token = CURRENT_UNIT.set(("noop", 2))
    try:
        job = asyncio.ensure_future(blocking_reward())
    finally:
        CURRENT_UNIT.reset(token)
    await job
    dog.close()
    (stall,) = stalls
    assert (stall.how, stall.unit, stall.index, stall.function, stall.call) == (
        "blocked", ("noop", 2), 2, "blocking_reward", "time.sleep")
    assert stall.at.endswith(f"test_watchdog.py:{line_of(blocking_reward, 'time.sleep(')}")
    assert stall.what.startswith("env code (blocking_reward) blocked the event loop at ")


async def test_a_swallowed_cancellation_is_named_from_the_tasks_await_chain() -> None:
    stalls: list[Stall] = []
    dog = Watchdog(stalls.append, stall_after=60.0)
    dog.install()
    HOLD.clear()
    token = CURRENT_UNIT.set(("gold", 1))
    try:
        job = asyncio.ensure_future(swallowing_reward())
    finally:
        CURRENT_UNIT.reset(token)
    await asyncio.sleep(0.2)
    job.cancel()
    deadline = time.monotonic() + CANCEL_GRACE + 3 * SCAN_EVERY
    while not stalls and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    HOLD.set()
    await asyncio.wait({job}, timeout=2)
    dog.close()
    (stall,) = stalls
    assert (stall.how, stall.unit, stall.function, stall.call) == (
        "ignored cancellation", ("gold", 1), "swallowing_reward", "asyncio.sleep")
    assert stall.at.endswith(
        f"test_watchdog.py:{line_of(swallowing_reward, 'asyncio.sleep(')}")


async def test_a_cancellation_that_is_honoured_is_not_a_stall() -> None:
    stalls: list[Stall] = []
    dog = Watchdog(stalls.append, stall_after=60.0)
    dog.install()
    job = asyncio.ensure_future(asyncio.sleep(3600))
    await asyncio.sleep(0.1)
    job.cancel()
    await asyncio.sleep(CANCEL_GRACE + 2 * SCAN_EVERY)
    dog.close()
    assert job.cancelled() and stalls == []
