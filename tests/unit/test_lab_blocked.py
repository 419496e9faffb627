"""A task whose plays end before their first model request (a harness that cannot reach a
remote toolset offline: ~20 s a play) is played until two plays on a runner ended so for the
same reason; its later plays on that runner get the first of them
(`vfcheck.checks._blocked_plays`). On a stand-in runner: no verifiers, no episode."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from vfcheck._model.core import ScriptedModelCore
from vfcheck.checks._blocked_plays import ALIKE as BLOCKED_ALIKE
from vfcheck.checks._lab import EpisodeLab

REFUSED = "HarnessError: harness 'vfcheck-chat' exited 1: ... connected to b'mcp.example':443"


class Log:
    """The scripted model's request log, as `ScriptedModelCore.requests_of` reads it."""

    def __init__(self) -> None:
        self.records: list[Any] = []

    @property
    def requests(self) -> list[Any]:
        return list(self.records)

    requests_of = ScriptedModelCore.requests_of


class Blocked:
    """Plays end with `errors[i]` (None: the model answered a request) before any call."""

    def __init__(self, *errors: str | None, requests: int = 0) -> None:
        self.errors = list(errors)
        self.played = 0
        self.model = Log()
        self.requests = requests

    async def play(self, task: Any, *, timeout: float, on_trace: Any) -> Any:
        error = self.errors[min(self.played, len(self.errors) - 1)]
        self.played += 1
        trace = SimpleNamespace(id=f"trace-{self.played}", calls=[] if error else [object()],
                                pending=0, errors=[])
        for _ in range(self.requests):  # a judge the scoring asked, in this play
            self.model.records.append(SimpleNamespace(request=SimpleNamespace(
                session_id=trace.id, episode=None)))
        await asyncio.sleep(0.01)
        return SimpleNamespace(unfinished=False, dead_tool_server=None, runner_error=None,
                               traces=[trace], episode=None, number=self.played,
                               errors=lambda *_: [error] if error else [])


def task(index: int = 0) -> Any:
    return SimpleNamespace(name=f"t{index}", data=SimpleNamespace(idx=index))


def lab_of(runner: Any, other: Any = None) -> EpisodeLab:
    async def timeout_runner() -> Any:
        return other or runner

    return EpisodeLab("vfc-stand-in", runner, SimpleNamespace(assigned={}), timeout_runner,
                      5.0, at_once=2)


def plays(runner: Blocked, count: int, *, fresh: bool = False, lab: Any = None) -> list[Any]:
    lab = lab or lab_of(runner)

    async def main() -> list[Any]:
        return [await lab.play(task(), fresh=fresh) for _ in range(count)]

    return asyncio.run(main())


def test_after_two_plays_blocked_alike_the_first_answers_the_rest() -> None:
    runner = Blocked(REFUSED)
    results = plays(runner, 5)
    assert runner.played == BLOCKED_ALIKE == 2
    assert [r.number for r in results] == [1, 2, 1, 1, 1]


def test_a_play_that_reached_the_model_or_failed_otherwise_stops_the_reuse() -> None:
    reached = Blocked(REFUSED, None, REFUSED)
    assert [r.number for r in plays(reached, 4)] == [1, 2, 3, 4]
    other = Blocked(REFUSED, "HarnessError: harness 'vfcheck-chat' exited 2: killed")
    assert [r.number for r in plays(other, 4)] == [1, 2, 3, 4]


def test_a_play_that_made_a_request_is_never_reused() -> None:
    """A judge asked during scoring answers as the play's policy says: another policy's
    play could score otherwise."""
    runner = Blocked(REFUSED, requests=1)
    assert [r.number for r in plays(runner, 4)] == [1, 2, 3, 4]


def test_fresh_plays_and_other_runners_still_play() -> None:
    """`soak` plays fresh (what each episode leaves); the hang's runner ends its plays on
    its own short agent timeout, and counts its own."""
    runner = Blocked(REFUSED)
    assert [r.number for r in plays(runner, 4, fresh=True)] == [1, 2, 3, 4]
    main, hang = Blocked(REFUSED), Blocked(REFUSED)
    lab = lab_of(main, hang)

    async def run() -> list[int]:
        first = [await lab.play(task()) for _ in range(3)]
        timeout_runner = await lab.timeout_runner()
        other = [await lab.play(task(), runner=timeout_runner) for _ in range(2)]
        return [r.number for r in first + other]

    assert asyncio.run(run()) == [1, 2, 1, 1, 2]
    assert (main.played, hang.played) == (2, 2)


def test_forgetting_the_task_plays_it_again() -> None:
    runner = Blocked(REFUSED)
    lab = lab_of(runner)
    plays(runner, 3, lab=lab)
    lab.forget(0)
    assert [r.number for r in plays(runner, 3, lab=lab)] == [3, 4, 3]
