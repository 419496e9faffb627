"""Soak: many episodes in one run, with model faults mixed in, leak nothing and lose nothing.

A short run hides slow leaks: a file descriptor per cancelled stream, a process per failed
harness, an episode whose line never reaches the JSONL when its neighbour hangs. This plays
enough episodes, concurrently, with every kind of fault, to make such a leak show.
"""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path

import pytest

from vfcheck._episodes.runner import run_episodes
from vfcheck._host.processes import descendants
from vfcheck._model import ModelRequest, Reply, ScriptedModel, from_function

EPISODES = 200
CONCURRENCY = 8
SEED = 20261130
EPISODE_TIMEOUT = 8.0
"""The runner's deadline per episode: what ends a hang."""
FD_SLACK = 16
FAULTS: list[tuple[Reply | None, int]] = [
    (None, 100),  # the default policy: echo the prompt, solve the task
    (Reply.fault("status", status=500), 14),
    (Reply.fault("status", status=429), 14),
    (Reply.fault("status", status=503), 14),
    (Reply.fault("malformed"), 14),
    (Reply.fault("cut"), 14),
    (Reply.fault("empty"), 14),
    (Reply.fault("huge"), 12),
    (Reply.fault("hang"), 4),
]
"""(fault, weight): None is a normal reply."""


def fault_plan(seed: int, episodes: int) -> dict[int, tuple[Reply, bool]]:
    """Which task's episode gets which fault, and whether on every request (persistent: the
    harness's retries fail too) or on the first only (transient: a retry recovers). The
    same plan for the same seed."""
    rng = random.Random(seed)
    replies, weights = zip(*FAULTS, strict=True)
    plan = {}
    for index in range(episodes):
        (reply,) = rng.choices(replies, weights=weights)
        persistent = rng.random() < 0.5
        if reply is not None:
            plan[index] = (reply, persistent)
    return plan


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def running_below(pid: int) -> set[int]:
    """Descendants of `pid` that still exist (zombies count: nobody reaped them)."""
    return {p for p in descendants(pid) if Path(f"/proc/{p}").exists()}


@pytest.mark.slow
async def test_soak_200_faulty_episodes_leak_nothing_and_lose_nothing(
    fixtures_dir: Path, tmp_path: Path
) -> None:
    """200 episodes of `vfc-many` (200 tasks, fast tier) at concurrency 8, seed 20261130:
    about half get a fault (status 500/429/503, malformed, cut, empty, huge, and a few hangs
    that the runner's 8 s deadline ends), on the first request or on every request.
    Afterwards no process is left below the test, at most 16 more file descriptors are open
    than before, and every episode has its result and its JSONL line, each with a reward
    or an error."""
    import verifiers.v1  # noqa: F401 - imported before the baseline: its import opens files

    plan = fault_plan(SEED, EPISODES)
    assert {r.fault_kind for r, _ in plan.values()} >= {"status", "malformed", "cut", "empty",
                                                         "huge", "hang"}

    def faulty(request: ModelRequest) -> Reply | None:
        index = request.task.index if request.task is not None else None
        if index is None or index not in plan:
            return None  # the default policy
        reply, persistent = plan[index]
        return reply if persistent or request.turn == 0 else None

    children_before = running_below(os.getpid())
    fds_before = open_fds()
    out = tmp_path / "episodes.jsonl"
    started = time.monotonic()
    summary = await run_episodes(
        "vfc-many", env_args={"num_tasks": EPISODES}, concurrency=CONCURRENCY, harness="fast",
        model=ScriptedModel(from_function(faulty), seed=SEED), timeout=EPISODE_TIMEOUT,
        paths=[str(fixtures_dir)], output=out,
    )
    elapsed = time.monotonic() - started

    assert [r.task.index for r in summary.results] == list(range(EPISODES))
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == EPISODES
    assert sorted(line["task"]["index"] for line in lines) == list(range(EPISODES))
    unaccounted = [line["task"]["index"] for line in lines
                   if line["reward"] is None and not line["errors"]]
    assert unaccounted == []
    # the faults really happened: happy and recovered episodes are solved, persistent
    # upstream faults are recorded errors, hangs end at the runner's deadline
    for result in summary.results:
        reply, persistent = plan.get(result.task.index, (None, False))
        kind = reply.fault_kind if reply is not None else None
        if kind is None or (kind in ("status", "malformed", "cut") and not persistent):
            assert result.reward == 1.0, result.errors()
        elif kind in ("status", "malformed", "cut"):
            assert result.errors() and result.reward == 0.0
        elif kind == "hang":
            assert "deadline" in (result.runner_error or "")

    deadline = time.monotonic() + 5  # a killed child may take a moment to be reaped
    while running_below(os.getpid()) - children_before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert running_below(os.getpid()) - children_before == set()
    assert open_fds() - fds_before <= FD_SLACK, sorted(os.listdir("/proc/self/fd"))
    print(f"soak: {EPISODES} episodes in {elapsed:.1f}s, fd delta {open_fds() - fds_before}")
