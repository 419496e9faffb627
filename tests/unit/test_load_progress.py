"""A load's deadline: a load still yielding tasks is slow (an `error` naming --timeout), one
that yields nothing or stopped yielding may hang (the load contract failed, as before)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from vfcheck._episodes.load_progress import QUIET_FLOOR, LoadProgress, LoadStopped
from vfcheck.checks.load import LOAD_TIMEOUT, out_of_time


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def loaded(clock: Clock, gaps: list[float]) -> LoadProgress:
    """A progress that saw one task after each of `gaps` seconds."""
    progress = LoadProgress(clock)
    tasks = progress.watch(range(len(gaps)))
    for gap in gaps:
        clock.now += gap
        next(tasks)
    return progress


def test_a_load_yielding_at_its_pace_is_still_yielding() -> None:
    clock = Clock()
    progress = loaded(clock, [0.5] * 60)  # a task each 0.5 s
    clock.now += 0.4
    assert progress.still_yielding()
    assert progress.observed() == ("load() was still yielding tasks: 60 in 30s, the last "
                                   "0.4s before the deadline")
    clock = Clock()
    slow = loaded(clock, [5.0, 5.0, 5.0])  # a generator whose tasks take 5 s each
    clock.now += QUIET_FLOOR + 4
    assert slow.still_yielding()  # within 3x its own pace
    clock.now += 2
    assert not slow.still_yielding()


def test_a_load_that_yields_nothing_or_stopped_is_not_yielding() -> None:
    clock = Clock()
    nothing = LoadProgress(clock)
    assert not nothing.still_yielding()
    assert nothing.observed() == ("the env's module or taskset was still being built "
                                  "(load() not iterated yet)")
    iterating = nothing.watch([])
    clock.now = 58.0
    assert list(iterating) == [] and not nothing.still_yielding()
    clock.now, nothing.iterating = 60.0, 2.0
    assert nothing.observed() == "load() yielded no task in 58s"
    stopped = loaded(clock, [0.1] * 5)
    clock.now += 50
    assert not stopped.still_yielding()
    assert stopped.observed() == "load() yielded 5 task(s), then none for 50s"


def test_once_the_deadline_ran_out_the_load_stops_at_its_next_task() -> None:
    progress = LoadProgress()
    tasks = progress.watch(range(10))
    assert next(tasks) == 0
    progress.stop.set()
    with pytest.raises(LoadStopped):
        next(tasks)


def test_where_names_the_env_frame_the_load_thread_stands_in() -> None:
    progress, started, release = LoadProgress(), threading.Event(), threading.Event()

    def load() -> None:
        progress.begin()
        started.set()
        release.wait(10)  # the env's own line

    thread = threading.Thread(target=load)
    thread.start()
    try:
        started.wait(10)
        time.sleep(0.05)
        where = progress.where()
    finally:
        release.set()
        thread.join()
    assert where is not None
    assert where.startswith("test_where_names_the_env_frame_the_load_thread_stands_in.<locals>"
                            ".load at ")
    assert where.endswith(": `release.wait(10)  # the env's own line`")
    assert progress.where() is None  # the thread ended


def test_a_load_still_yielding_at_the_deadline_is_an_error_naming_the_load_timeout() -> None:
    clock = Clock()
    progress = loaded(clock, [0.5] * 101)
    clock.now += 0.2
    finding = out_of_time("slow", LOAD_TIMEOUT, progress)
    assert finding.outcome == "error"
    assert finding.message.startswith(
        "env 'slow': loading ran out of time — load() was still yielding tasks: 101 in 50s, the "
        "last 0.2s before the deadline. A finite load slower than vfcheck's 60s deadline "
        "breaks no contract")
    for named in ("--load-timeout S", "--vf-load-timeout S",
                  "[tool.vfcheck] load_timeout = S", "INFINITE = True"):
        assert named in finding.message
    assert "hanging" not in finding.message and "Contract" not in finding.message
    assert finding.details["load"]["yielded"] == 101


def test_a_load_that_yielded_nothing_at_the_deadline_fails_the_contract() -> None:
    clock = Clock()
    progress = LoadProgress(clock)
    list(progress.watch([]))
    clock.now = 59.0
    finding = out_of_time("hang", LOAD_TIMEOUT, progress)
    assert finding.outcome == "failed"
    assert finding.message.startswith(
        "env 'hang': loading did not finish within 60s: load() yielded no task in 59s "
        "(an infinite or hanging load()?). Contract: ")
    assert "--timeout" not in finding.message and "--load-timeout" not in finding.message


def test_where_follows_a_coroutine_awaited_on_the_load_threads_own_loop() -> None:
    progress, started = LoadProgress(), threading.Event()
    running: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []

    async def fetch_rows() -> None:
        answered = asyncio.Event()
        running.append((asyncio.get_running_loop(), answered))
        started.set()
        await answered.wait()  # the service never answers

    def load() -> None:
        progress.begin()
        asyncio.run(fetch_rows())

    thread = threading.Thread(target=load)
    thread.start()
    try:
        started.wait(10)
        time.sleep(0.05)
        where = progress.where()
    finally:
        for loop, answered in running:
            loop.call_soon_threadsafe(answered.set)
        thread.join(10)
    assert where is not None and ".fetch_rows at " in where
    assert where.endswith(": `await answered.wait()  # the service never answers`")
