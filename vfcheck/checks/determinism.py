"""`determinism`: two loads give the same tasks, and the same task played twice against the
same script gives the same normalised trace."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import sys
from collections.abc import Awaitable
from typing import Any

from vfcheck._host.processes import WORKER_HASH_SEED
from vfcheck._shared.findings import Finding
from vfcheck.checks._alone_verdicts import note
from vfcheck.checks._context import CheckContext
from vfcheck.checks._lab import (
    dead_server_block,
    episode_lab,
    normalized_views,
    unfinished_plays,
)
from vfcheck.checks._registry import check, family, spec_of, worker_mode
from vfcheck.checks.load import LOAD_TIMEOUT, no_network, task_hashes

family("determinism", order=95, summary="two loads give the same tasks; the same task played "
       "twice gives the same trace.")

FRESH_HASH_SEED = 2
"""The other load's, in a fresh interpreter started with the worker (the two imports overlap)."""


@worker_mode("hashes")
def print_hashes(spec: dict[str, Any]) -> None:
    """The worker's `--hashes` mode: this interpreter's load, as `Task.hash` per task (one
    JSON line on stdout)."""
    from vfcheck._episodes.offline import prepare_process_env
    from vfcheck._episodes.runner import load_env
    from vfcheck._episodes.task_loading import load_tasks

    options = spec["options"]  # `CheckOptions.as_dict()`: the option table is above checks
    prepare_process_env(options.get("paths") or [])
    with no_network([]):
        env, _ = load_env(spec["env_id"], options.get("env_args") or {},
                          harness=options.get("harness"))
        tasks = load_tasks(env, options.get("num_tasks"), infinite_sample=options.get("sample"))
    print(json.dumps(task_hashes(tasks)))


async def hashes_in_fresh_interpreter(spec: dict[str, Any], hash_seed: int,
                                      handed: asyncio.Future[None] | None = None) -> list[str]:
    """`Task.hash` of every task, loaded by another interpreter with `PYTHONHASHSEED`.
    `handed` is set once the interpreter has its spec (or could not start): from then on it
    loads on its own, whatever this process's event loop does."""
    proc = None
    try:
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "vfcheck._isolation.worker", "--hashes",
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env={**os.environ, "PYTHONHASHSEED": str(hash_seed)},
            )
            assert proc.stdin is not None
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # it died: below
                proc.stdin.write(json.dumps(spec).encode())  # it reads it at once
                await proc.stdin.drain()
            proc.stdin.close()  # it reads its spec to the end before it imports anything
        finally:
            if handed is not None and not handed.done():
                handed.set_result(None)
        out, err = await proc.communicate()
    finally:
        if proc is not None and proc.returncode is None:  # cancelled (the env did not load):
            proc.kill()  # don't leave it behind
            await proc.wait()
    if proc.returncode != 0:
        tail = err.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"the load in a fresh interpreter failed (exit {proc.returncode}): "
                           f"{tail[0]}")
    result: list[str] = json.loads(out.decode().strip().splitlines()[-1])
    return result


async def compare_loads(env_id: str, fresh: Awaitable[list[str]], own: list[str]) -> Finding:
    """The worker's own load (PYTHONHASHSEED=1) and a fresh interpreter's (=2) must list the
    same hashes. Two loads, not three: the worker's is a fresh interpreter's first load too,
    and each extra interpreter costs a verifiers import (seconds)."""
    other = await fresh
    runs = {f"PYTHONHASHSEED={WORKER_HASH_SEED}": own, f"PYTHONHASHSEED={FRESH_HASH_SEED}": other}
    if other != own:
        diverge = next(
            (i for i, (a, b) in enumerate(zip(own, other, strict=False)) if a != b),
            min(len(own), len(other)),
        )
        return Finding(
            "determinism.load", "determinism", None, "failed",
            f"env {env_id!r}: two loads gave different tasks: the loads with "
            f"PYTHONHASHSEED={WORKER_HASH_SEED} and ={FRESH_HASH_SEED} first differ at task "
            f"{diverge} ({len(own)} vs {len(other)} tasks; compare Task.hash). Contract: "
            f"{spec_of('determinism.load').contract} (iterate sorted(), not a set).",
            {"hashes": {k: v[:50] for k, v in runs.items()}, "first_difference": diverge},
        )
    return Finding(
        "determinism.load", "determinism", None, "passed",
        f"env {env_id!r}: {len(own)} task hash(es) identical across two fresh interpreters", {},
    )


def hash_spec(ctx: CheckContext) -> dict[str, Any]:
    """What the fresh interpreter of `determinism.load` needs to load the env alike."""
    return {"env_id": ctx.env_id, "options": ctx.spec["options"]}


def start_fresh_load(ctx: CheckContext) -> asyncio.Future[None]:
    """Start the other load now, so that its verifiers import overlaps the worker's: the
    future is done once that interpreter has its spec (the worker waits for it before its
    own import, which holds the event loop)."""
    handed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    ctx.extras["fresh_hashes"] = asyncio.ensure_future(
        hashes_in_fresh_interpreter(hash_spec(ctx), FRESH_HASH_SEED, handed))
    return handed


@check(
    "determinism.load", family="determinism", scope="env", budget=2.0,
    min_timeout=LOAD_TIMEOUT, prepare=start_fresh_load,
    contract="two loads in fresh interpreters give the same tasks in the same order",
    fails_when="two loads in fresh interpreters (the check worker's own, PYTHONHASHSEED 1, and "
    "one started beside it, 2) give different `Task.hash` sequences",
    why="resume, replay and splits address tasks by position and hash",
)
async def determinism_load(ctx: CheckContext, _: Any) -> Finding:
    if "fresh_hashes" not in ctx.extras:
        start_fresh_load(ctx)
    return await compare_loads(ctx.env_id, ctx.extras["fresh_hashes"], task_hashes(ctx.tasks))


@check(
    "determinism.replay", family="determinism", scope="sample", budget=4.5,
    contract="the same task played twice against the same script gives the same normalised "
    "trace",
    fails_when="the same task played twice against the same script differs after "
    "normalisation, or a play did not finish within the runner's deadline (blocked: nothing "
    "to compare). Two plays at once that differ are played again one at a time, which "
    "decide: a difference only at once is `concurrency`'s to report",
    why="golden traces and reproducible evals need it",
)
async def replay(ctx: CheckContext, task: Any) -> Finding:
    lab = await episode_lab(ctx)
    finding = replay_verdict(ctx, task, await lab.both_plays(task))
    if finding.outcome != "failed" or not finding.details.get("diff"):
        return finding
    alone = replay_verdict(ctx, task, await lab.both_alone(task))
    if alone.outcome != "passed":
        return finding
    return dataclasses.replace(alone, message=note(alone.message, finding.details["diff"][:3],
                                                   task.data.idx),
                               details={**alone.details, "at_once": finding.details})


def replay_verdict(ctx: CheckContext, task: Any, plays: tuple[Any, Any]) -> Finding:
    """The verdict on two plays of `task`: the same normalised traces, or where they
    differ."""
    from vfcheck._traces.normalize import trace_diff

    if (dead := dead_server_block(plays, task.data.idx)) is not None:
        return ctx.finding("determinism.replay", task, "skipped", dead)
    if (blocked := unfinished_plays(plays, task.data.idx)) is not None:
        return ctx.finding("determinism.replay", task, "failed", blocked)
    a, b = (normalized_views(r) for r in plays)
    if len(a) != len(b):
        return ctx.finding("determinism.replay", task, "failed",
                        f"the two plays minted {len(a)} and {len(b)} trace(s)")
    diff = [line for x, y in zip(a, b, strict=True) for line in trace_diff(x, y)]
    if diff:
        return ctx.finding(
            "determinism.replay", task, "failed",
            "two plays against the same script differ after normalisation: "
            + "; ".join(diff[:5]) + (f" (+{len(diff) - 5} more)" if len(diff) > 5 else ""),
            diff=diff,
        )
    return ctx.finding("determinism.replay", task, "passed",
                    "two plays normalise identically")
