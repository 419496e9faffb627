"""The episode lab's two other ways to play, on a stand-in runner (no verifiers, no
episode): a group is in flight together, and a play one at a time has nothing else of the
env in flight, memoised by name (`vfcheck.checks._lab`)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from vfcheck.checks._lab import EpisodeLab


class StandIn:
    """Plays an episode by sleeping; records how many were in flight at each start."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.seen: list[tuple[str, int]] = []

    async def play(self, task: Any, *, timeout: float, on_trace: Any) -> Any:
        self.in_flight += 1
        self.seen.append((task.name, self.in_flight))
        await asyncio.sleep(0.05)
        self.in_flight -= 1
        return SimpleNamespace(unfinished=False, dead_tool_server=None, runner_error=None,
                               task=task.name, traces=[], episode=None,
                               errors=lambda *_: [])


def task(name: str, index: int = 0) -> Any:
    return SimpleNamespace(name=name, data=SimpleNamespace(idx=index))


def lab_of(runner: StandIn, at_once: int) -> EpisodeLab:
    async def no_runner() -> Any:
        return runner

    return EpisodeLab("vfc-stand-in", runner, SimpleNamespace(assigned={}), no_runner, 5.0,
                      at_once=at_once)


def test_a_group_is_in_flight_together_even_beyond_the_capacity() -> None:
    async def main() -> list[tuple[str, int]]:
        runner = StandIn()
        lab = lab_of(runner, at_once=3)
        await lab.play_group(task("group"), [None] * 4)
        return runner.seen

    assert [n for _, n in asyncio.run(main())] == [1, 2, 3, 4]


def test_a_play_alone_waits_for_the_episodes_in_flight_and_lets_none_start() -> None:
    async def main() -> list[tuple[str, int]]:
        runner = StandIn()
        lab = lab_of(runner, at_once=4)
        early = [asyncio.ensure_future(lab.play(task("early"))) for _ in range(3)]
        await asyncio.sleep(0.01)  # the early ones are in flight
        alone = asyncio.ensure_future(lab.alone_plays(task("alone"), {"a": None, "b": None}))
        await asyncio.sleep(0.01)
        late = [asyncio.ensure_future(lab.play(task("late"))) for _ in range(2)]
        await asyncio.gather(*early, alone, *late)
        return runner.seen

    seen = asyncio.run(main())
    assert [name for name, _ in seen] == ["early"] * 3 + ["alone"] * 2 + ["late"] * 2
    assert [n for name, n in seen if name == "alone"] == [1, 1]


def test_plays_one_at_a_time_are_memoised_by_name_and_forgotten_with_the_task() -> None:
    async def main() -> tuple[int, int, bool]:
        runner = StandIn()
        lab = lab_of(runner, at_once=2)
        first = await lab.alone_plays(task("t"), {"oracle": None})
        again = await lab.alone_plays(task("t"), {"oracle": None, "empty": None})
        played = len(runner.seen)
        lab.forget(0)
        await lab.alone_plays(task("t"), {"oracle": None})
        return played, len(runner.seen), first["oracle"] is again["oracle"]

    assert asyncio.run(main()) == (2, 3, True)


def test_plays_alone_asked_for_while_the_lab_drains_share_one_hold() -> None:
    """Two tasks' plays alone, asked for while episodes are in flight, play one after the
    other once those end: the second does not wait for another drain."""
    async def main() -> list[tuple[str, int]]:
        runner = StandIn()
        lab = lab_of(runner, at_once=3)
        early = [asyncio.ensure_future(lab.play(task("early"))) for _ in range(2)]
        await asyncio.sleep(0.01)
        first = asyncio.ensure_future(lab.alone_plays(task("a", 0), {"oracle": None}))
        await asyncio.sleep(0.01)
        late = asyncio.ensure_future(lab.play(task("late")))
        second = asyncio.ensure_future(lab.alone_plays(task("b", 1), {"oracle": None}))
        await asyncio.gather(*early, first, second, late)
        return runner.seen

    seen = asyncio.run(main())
    assert seen == [("early", 1), ("early", 2), ("a", 1), ("b", 1), ("late", 1)]
