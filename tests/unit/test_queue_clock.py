"""Deadlines do not count the time episodes waited for a slot: the clock counts it, the
worker's deadline and the supervisor's hard deadline both move by it, and a unit that is
slow on its own still times out, saying what was added."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from vfcheck._host.queue_clock import QUEUE_CLOCK, QueueClock
from vfcheck._isolation.events import EventLog, append_event
from vfcheck._isolation.worker import Worker
from vfcheck.checks import REGISTRY


async def test_the_clock_counts_only_the_time_something_waited() -> None:
    clock, gate = QueueClock(), asyncio.Semaphore(1)

    async def hold(seconds: float) -> None:
        async with clock.slot(gate):
            await asyncio.sleep(seconds)

    async with clock.slot(gate):
        pass
    assert clock.waited() == 0.0  # a free slot costs no wait
    await asyncio.gather(hold(0.3), hold(0.3), hold(0.3))  # two wait, overlapping
    assert 0.5 < clock.waited() < 0.9


def test_the_supervisors_hard_deadline_moves_by_the_queued_seconds(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = EventLog(path)
    append_event(path, {"event": "hello", "pid": 1})
    append_event(path, {"event": "queued", "seconds": 2.0})
    append_event(path, {"event": "start", "check": "episode", "index": 0, "deadline": 0.2})
    log.poll()
    time.sleep(0.3)
    assert log.overdue(0.0) == [("episode", 0)]
    append_event(path, {"event": "queued", "seconds": 7.0})  # 5 s more since it started
    log.poll()
    assert log.overdue(0.0) == []


def worker(tmp_path: Path) -> Any:
    return Worker({"env_id": "vfc-echo", "events": str(tmp_path / "events.jsonl"),
                   "options": {}, "skip": [], "isolate": []})


async def test_a_unit_behind_a_full_gate_keeps_its_own_deadline(tmp_path: Path) -> None:
    spec = REGISTRY["episode"]
    gate = asyncio.Semaphore(1)

    async def hog() -> None:
        async with QUEUE_CLOCK.slot(gate):
            await asyncio.sleep(0.6)

    async def unit() -> Any:
        async with QUEUE_CLOCK.slot(gate):  # waits ~0.6 s behind the hog
            await asyncio.sleep(0.1)
        return "finding"

    hogging = asyncio.ensure_future(hog())
    await asyncio.sleep(0)
    job = asyncio.ensure_future(unit())
    assert await worker(tmp_path).finish(job, spec, None, 0.4) == "finding"
    await hogging


async def test_a_slow_unit_still_times_out_naming_the_wait_added(tmp_path: Path) -> None:
    spec = REGISTRY["episode"]
    job = asyncio.ensure_future(asyncio.sleep(5))
    finding = await worker(tmp_path).finish(job, spec, None, 0.2)
    assert finding.outcome == "failed"
    assert "did not finish within 0.2s (timeout" in finding.message
    assert json.loads(json.dumps(finding.details))["queued"] == 0.0
