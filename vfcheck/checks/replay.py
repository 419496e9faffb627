"""`determinism.replay`: the same task played twice against the same script is the same."""

from __future__ import annotations

from typing import Any

from vfcheck.checks.context import CheckContext
from vfcheck.checks.lab import episode_lab, normalized_views, unfinished_plays
from vfcheck.checks.registry import check
from vfcheck.findings import Finding


@check(
    "determinism.replay", family="determinism", scope="sample", budget=4.5,
    contract="the same task played twice against the same script gives the same normalised "
    "trace",
    fails_when="the same task played twice against the same script differs after "
    "normalisation, or a play did not finish within the runner's deadline (blocked: nothing "
    "to compare)",
    why="golden traces and reproducible evals need it",
)
async def replay(ctx: CheckContext, task: Any) -> Finding:
    from vfcheck.traces.normalize import trace_diff

    plays = await (await episode_lab(ctx)).both_plays(task)
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
