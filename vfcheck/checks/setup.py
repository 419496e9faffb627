"""`setup`: `Task.setup` completes in a fresh runtime within the timeout, as vf-validate's
setup check (`vfcheck.checks._validate`)."""

from __future__ import annotations

from typing import Any

from vfcheck._shared.findings import Finding
from vfcheck.checks._context import CheckContext
from vfcheck.checks._registry import check, family
from vfcheck.checks._validate import check_task, run_config

family("setup", order=30, summary="`Task.setup` succeeds within the timeout, without blocking "
       "the event loop.")


@check(
    "setup", family="setup", scope="task", budget=1.5, blocked_by_setup=False,
    runs=("setup",),
    contract="Task.setup completes in a fresh runtime within the timeout",
    fails_when="`Task.setup` raises or outlives the timeout (also when it blocks the event loop)",
    why="a task whose setup fails can never be rolled out",
)
async def setup(ctx: CheckContext, task: Any) -> Finding:
    """verifiers' setup check; a task whose network policy the subprocess runtime refuses
    is played under vfcheck's offline policy (`vfcheck._episodes.runtime_fit`), and its
    finding says so, naming the env's setting and verifiers' refusal."""
    from vfcheck._episodes.runtime_fit import refusal

    finding = await check_task(ctx.env_id, task, "setup", run_config(ctx),
                               ctx.failed("episode_lab"))
    if (refused := refusal(task, (getattr(ctx.env, "taskset", None),))) is not None:
        finding.message += f"; {refused.describe()}"
        finding.details["runtime_refusal"] = {
            "setting": refused.setting, "site": refused.site, "refusal": refused.refusal}
    return finding
