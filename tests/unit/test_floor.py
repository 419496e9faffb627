"""The run's floor across worker processes: while one worker holds it alone, the others
start nothing new, and it waits for their work in flight first. `flock` locks belong to
an open file, so two `Floor`s of one process behave as two workers do.

A floor that never lets go would hang these tests: each one's waits are bounded
(`within`), so a broken floor fails in seconds, naming what it waited for."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from pathlib import Path
from typing import TypeVar

from vfcheck._host.floor import Floor

T = TypeVar("T")


BOUND = 10.0
"""Seconds any test here may wait (each waits well under one)."""


async def within(what: str, awaitable: Awaitable[T]) -> T:
    try:
        return await asyncio.wait_for(awaitable, BOUND)
    except TimeoutError:
        raise AssertionError(f"{what}: still waiting after {BOUND:g}s (the floor never let "
                             "go)") from None


def floors(run_dir: Path, n: int = 2) -> list[Floor]:
    made = [Floor() for _ in range(n)]
    for floor in made:
        floor.open(run_dir)
    return made


async def test_work_shares_the_floor(tmp_path: Path) -> None:
    one, two = floors(tmp_path)
    async def share() -> None:
        async with one.shared(), one.shared(), two.shared():
            pass  # nobody waits for anybody

    await within("three shared holds", share())


async def test_alone_waits_for_the_others_work_in_flight(tmp_path: Path) -> None:
    confirming, other = floors(tmp_path)
    events: list[str] = []

    async def episode() -> None:
        async with other.shared():
            events.append("episode starts")
            await asyncio.sleep(0.3)
            events.append("episode ends")

    async def confirmation() -> None:
        await asyncio.sleep(0.05)
        async with confirming.alone():
            events.append("alone")

    await within("an episode, then the floor alone", asyncio.gather(episode(), confirmation()))
    assert events == ["episode starts", "episode ends", "alone"]


async def test_while_one_is_alone_the_others_start_nothing(tmp_path: Path) -> None:
    confirming, other = floors(tmp_path)
    events: list[str] = []

    async def confirmation() -> None:
        async with confirming.alone():
            events.append("alone")
            async with confirming.shared():  # its own work passes
                await asyncio.sleep(0.3)
            events.append("done")

    async def episode() -> None:
        await asyncio.sleep(0.05)
        async with other.shared():
            events.append("episode")

    await within("the floor alone, then an episode", asyncio.gather(confirmation(), episode()))
    assert events == ["alone", "done", "episode"]


async def test_two_that_want_it_alone_take_turns(tmp_path: Path) -> None:
    one, two = floors(tmp_path)
    inside: list[int] = []
    most = [0]

    async def confirm(floor: Floor) -> None:
        async with floor.alone():
            inside.append(1)
            most[0] = max(most[0], len(inside))
            await asyncio.sleep(0.1)
            inside.pop()

    await within("three turns alone", asyncio.gather(confirm(one), confirm(two), confirm(one)))
    assert most[0] == 1


async def test_a_cancelled_waiter_leaves_no_lock(tmp_path: Path) -> None:
    confirming, other, third = floors(tmp_path, 3)

    async def cancel_a_waiter() -> None:
        async with confirming.alone():
            waiter = asyncio.ensure_future(other.shared().__aenter__())
            await asyncio.sleep(0.1)
            waiter.cancel()
        async with third.alone():  # nothing of the cancelled waiter holds the floor
            pass

    await within("the floor after a cancelled waiter", cancel_a_waiter())


async def test_an_unopened_floor_lets_everything_through() -> None:
    floor = Floor()

    async def both() -> None:
        async with floor.alone(), floor.shared():
            pass

    await within("an unopened floor", both())
