"""`gold`: `Task.validate` accepts the task's own reference solution, as vf-validate's gold
check (`vfcheck.checks._validate`)."""

from __future__ import annotations

from typing import Any

from vfcheck._shared.findings import Finding
from vfcheck.checks._context import CheckContext
from vfcheck.checks._registry import check, family
from vfcheck.checks._validate import check_task, lab_model, run_config

family("gold", order=40, summary="`Task.validate` accepts the task's own reference solution.")


@check(
    "gold", family="gold", scope="task", budget=2.5, runs=("setup", "validate", "scoring"),
    contract="Task.validate accepts the task's own reference solution",
    fails_when="`Task.validate` returns False (or anything but True, False or None: the message "
    "names what it returned), raises or times out; `None` = no gold check: skipped",
    why="a task its own reference cannot solve trains on noise",
)
async def gold(ctx: CheckContext, task: Any) -> Finding:
    return await check_task(ctx.env_id, task, "gold", run_config(ctx),
                            ctx.failed("episode_lab"), lab_model(ctx))
