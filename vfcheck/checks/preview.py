"""`preview`: a model request that fails, times out or is cancelled leaves no preview."""

from __future__ import annotations

import asyncio
from typing import Any

from vfcheck._shared.findings import Finding
from vfcheck.checks._context import CheckContext
from vfcheck.checks._judge_calls import judge_exchanges
from vfcheck.checks._lab import agent_fault, blocked_before_model, dead_server_block, episode_lab
from vfcheck.checks._registry import check, family

family("preview", order=80, summary="after a 500, a hang or a cancel, no stale preview is left on "
       "the trace.")


@check(
    "preview", family="preview", scope="sample", budget=5.5,
    contract="a model request that fails, times out or is cancelled leaves no preview behind",
    fails_when="after an upstream 500 the failed call is not recorded or a preview remains; "
    "after a hang ended by the agent timeout (0.5 s on the fast tier, 1 s when the tasks offer "
    "tools, 2 s on the env tier) the stop is not `agent_timeout` or `trace.pending` is not "
    "empty; after a cancel mid-request `trace.pending` is not empty (5 s to settle)",
    why="a stale preview shows watchers a turn that never happened",
)
async def preview(ctx: CheckContext, task: Any) -> Finding:
    from vfcheck._model import Reply

    lab = await episode_lab(ctx)
    problems: list[str] = []
    scenarios: dict[str, Any] = {}
    # the three scenarios are independent episodes: played at once, the preview check
    # costs the longest of them (the agent timeout), not their sum
    failed, hung, (cancelled, seen_preview) = await asyncio.gather(
        lab.play_fault(task, agent_fault(Reply.fault("status", status=500))),
        lab.play_hang(task),
        lab.cancel_mid_request(task),
    )
    if (blocked := dead_server_block([failed, hung], task.data.idx)) is not None:
        return ctx.finding("preview", task, "skipped", blocked)
    if blocked_before_model(failed) is not None and (
            blocked := blocked_before_model(await lab.first_play(task))) is not None:
        # the task's own episode (memoised: `episode`'s) ended the same way: it explains
        return ctx.finding("preview", task, "skipped",
                        f"blocked — {blocked}, so no request was left to preview (see "
                        f"episode[{task.data.idx}])")
    # 1. an upstream 500 on every request
    calls = [c for t in failed.traces for c in t.calls]
    errored = [c for c in calls if c.error is not None]
    pending = sum(len(t.pending) for t in failed.traces)
    scenarios["upstream_500"] = {"calls": len(calls), "errored_calls": len(errored),
                                 "pending": pending}
    if failed.runner_error:
        problems.append(f"after an upstream 500 the runner failed ({failed.runner_error})")
    if not errored:
        problems.append(f"after an upstream 500 no failed call is recorded ({len(calls)} "
                        "call(s) on the trace)")
    if pending:
        problems.append(f"after an upstream 500, {pending} previewed message(s) remain "
                        "(trace.pending)")
    # 2. a hang ended by the agent timeout
    stops = [t.stop_condition for t in hung.traces]
    pending = sum(len(t.pending) for t in hung.traces)
    scenarios["hang_agent_timeout"] = {"stops": stops, "pending": pending,
                                       "runner_error": hung.runner_error}
    if exchanges := judge_exchanges(hung.traces):  # the timed-out episode is scored
        scenarios["hang_agent_timeout"]["judge_exchanges"] = exchanges
    if hung.runner_error:
        problems.append(f"a hang was not ended by the agent timeout ({hung.runner_error})")
    elif not any(s == "agent_timeout" for s in stops):
        problems.append(f"after a hang the stop is {stops}, not the agent timeout")
    if pending:
        problems.append(f"after a hang ended by the agent timeout, {pending} previewed "
                        "message(s) remain (trace.pending)")
    # 3. the caller cancels mid-request
    pending = sum(len(t.pending) for t in cancelled)
    scenarios["cancel"] = {"traces": len(cancelled), "saw_preview": seen_preview,
                           "pending": pending}
    if not seen_preview:
        problems.append("no request was previewed before the cancel (the harness made no "
                        f"model request within {lab.timeout:g}s)")
    if pending:
        problems.append(f"after a cancel mid-request, {pending} previewed message(s) "
                        "remain (trace.pending)")
    if problems:
        return ctx.finding("preview", task, "failed", "; ".join(problems),
                        scenarios=scenarios)
    return ctx.finding("preview", task, "passed",
                    "no preview left after a 500, a timeout and a cancel",
                    scenarios=scenarios)
