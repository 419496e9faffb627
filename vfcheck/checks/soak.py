"""`soak.memory`: one task played many times over keeps no more memory in env code from
episode to episode.

A training run plays an env's tasks for hours in the same processes. An env that keeps
something per episode (every trace appended to a class-level list, a per-episode cache
never evicted) passes a check of three episodes and runs out of memory after thousands.
The check plays the first sampled task `--soak-episodes` times through the episode lab,
once every other check of the worker is done (phase `last`: their episodes would blur what
it measures, and its tracing would slow them). The first fifth warm up untraced (imports,
caches; the episodes the other checks played count); the rest are played in
two stretches, each as many at once as the lab plays (as a trainer plays a group; two
episodes a stretch when each starts a tool server or a harness program), and
tracemalloc (`vfcheck._host.retained`) snapshots what env code's lines hold before, between
and after them, with no episode in flight. A line that held more after each stretch grows
per episode (`vfcheck.checks._memory_growth`).

What it sees: allocations in the check worker, where the fast tier plays every episode (the
env's hooks, rewards, stop conditions and judges' callers). Out of sight: tool servers and
harness programs (other processes), and what verifiers allocated that env code keeps alive
(a whole trace appended to a list counts as the list's growth only).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from vfcheck._host.retained import Kept, RetainedMemory
from vfcheck._shared.findings import Finding
from vfcheck.checks._context import CheckContext
from vfcheck.checks._lab import (
    EpisodeLab,
    dead_server_block,
    episode_lab,
    episode_skip_reason,
    starts_processes,
)
from vfcheck.checks._memory_growth import growth_observed, steady_growth
from vfcheck.checks._registry import check, family

CHECK = "soak.memory"

family("soak", order=150, summary="one task played many times over keeps no more memory in "
       "env code from episode to episode.")

PROCESS_STRETCH = 2
"""A stretch's episodes when each episode starts processes (a tool server, a harness program
on the env tier: a second or more each, and out of sight): the fewest that show growth."""


def soak_plan(episodes: int) -> tuple[int, int]:
    """`(warm-up, stretch)`: untraced warm-up episodes, then two traced stretches of
    `stretch` episodes each (an odd one out goes to the warm-up). The episodes other checks
    played before (the first sampled task's among them) warm the process up too: they count."""
    warmup = max(1, episodes // 5)
    return episodes - 2 * ((episodes - warmup) // 2), (episodes - warmup) // 2


@check(
    CHECK, family="soak", scope="env", phase="last", budget=3.0, blocked_by_setup=False,
    contract="playing a task many times over, env code keeps no more memory from episode to "
    "episode than the threshold",
    fails_when="the first sampled task played `--soak-episodes` times in the check worker once "
    "every other check of the env is done (the first fifth untraced, to warm up; the rest in "
    "two stretches, as many at once as the episode lab plays; two episodes a stretch when each "
    "starts a tool server or a harness program), the memory still allocated by "
    "lines of env code (tracemalloc, two frames deep, after a garbage collection) grew over "
    "each stretch, by more than `--soak-growth` bytes per episode in all; the message names "
    "each line that allocated what was kept (file:line and its code) and the bytes per "
    "episode. Out of sight: tool servers and harness programs (other processes), and memory "
    "verifiers allocated that env code keeps alive",
    why="a training run plays thousands of episodes per process: memory kept per episode "
    "ends in an out-of-memory crash hours in",
)
async def memory(ctx: CheckContext, _: Any) -> Finding:
    if not ctx.sample:
        return ctx.finding(CHECK, None, "skipped", "no task to play")
    task = ctx.task_of[ctx.sample[0]]
    label = ctx.where(task).removeprefix(f"env {ctx.env_id!r}, ")
    if (reason := episode_skip_reason(ctx, task)) is not None:
        return ctx.finding(CHECK, None, "skipped", f"{label}: {reason}")
    lab = await episode_lab(ctx)
    warmup, stretch = soak_plan(ctx.options.soak_episodes)
    warmed = min(warmup, lab.played)  # by the other checks' episodes, in this process
    started, cpu = time.perf_counter(), time.process_time()
    if (blocked := await played_at_once(lab, task, warmup - warmed)) is not None:
        return ctx.finding(CHECK, None, "skipped", f"{label}: {blocked}")
    planned, starts = stretch, starts_processes(ctx.tiers)
    if starts is not None:
        stretch = min(stretch, PROCESS_STRETCH)
    memory = RetainedMemory()
    snapshots: list[Kept] = []
    played: list[int] = []
    memory.start()
    try:
        for _ in range(2):
            snapshots.append(memory.kept())
            played.append(lab.played)
            if (blocked := await played_at_once(lab, task, stretch)) is not None:
                return ctx.finding(CHECK, None, "skipped", f"{label}: {blocked}")
        snapshots.append(memory.kept())
        played.append(lab.played)
    finally:
        memory.stop()
    own = 2 * stretch
    others = played[-1] - played[0] - own
    growth = steady_growth(snapshots, [float(p - played[0]) for p in played])
    over, observed = growth_observed(growth, ctx.options.soak_growth, warmup=warmup,
                                     warmed=warmed, own=own, others=others)
    details = {"index": task.data.idx, "warmup": warmup, "warmed": warmed, "traced": own,
               "others": others, "seconds": round(time.perf_counter() - started, 3),
               "cpu_seconds": round(time.process_time() - cpu, 3),
               "lines": [{"at": g.site.at, "code": g.site.code, "per_episode": g.per_episode,
                          "kept": g.kept} for g in growth]}
    budgeted = "" if stretch == planned else (
        f" (each episode starts {starts}: two stretches of {stretch} instead of {planned})")
    return ctx.finding(CHECK, None, "failed" if over else "passed",
                       f"{label} played {warmup - warmed + own} times over{budgeted}: "
                       f"{observed}", **details)


async def played_at_once(lab: EpisodeLab, task: Any, count: int) -> str | None:
    """Play `task` `count` times, as many at once as the lab's gate lets through, and let the
    episodes go (the scripted model forgets them too); why its episodes cannot be soaked, if
    they cannot (a tool server that never serves, the runner's deadline: `episode` reports
    the cause). A stretch ends when all its episodes have: the snapshot after it sees none
    in flight."""
    results = await asyncio.gather(*(lab.play(task, fresh=True) for _ in range(count)))
    model = lab.runner.model
    for result in results:
        if model is not None and result.scope is not None:
            model.forget(result.scope.trace_ids)
    if (dead := dead_server_block(results, task.data.idx)) is not None:
        return dead
    for result in results:
        if result.unfinished:
            return (f"blocked — an episode did not finish ({result.runner_error}); see "
                    f"episode[{task.data.idx}]")
    return None
