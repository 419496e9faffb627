"""`noop`: the untouched task does not earn the full reward, as vf-validate's noop check
(`vfcheck.checks._validate`)."""

from __future__ import annotations

from typing import Any

from vfcheck._shared.findings import Finding
from vfcheck.checks._context import CheckContext
from vfcheck.checks._registry import check, family
from vfcheck.checks._validate import check_task, lab_model, run_config

family("noop", order=50, summary="the untouched task does not earn the full reward.")


@check(
    "noop", family="noop", scope="task", budget=2.5, runs=("setup", "finalize", "scoring"),
    contract="finalising and scoring the untouched task gives a reward below 1.0",
    fails_when="finalize + score of the untouched task gives reward >= 1.0, or raises; no "
    "rewards: skipped",
    why="a task that passes with no work rewards doing nothing",
)
async def noop(ctx: CheckContext, task: Any) -> Finding:
    return await check_task(ctx.env_id, task, "noop", run_config(ctx),
                            ctx.failed("episode_lab"), lab_model(ctx))
