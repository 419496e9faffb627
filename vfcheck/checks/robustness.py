"""`robustness`: env code survives empty, whitespace, huge and malformed model output."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from vfcheck._shared.findings import Finding
from vfcheck.checks._context import CheckContext
from vfcheck.checks._judge_calls import judge_exchanges
from vfcheck.checks._lab import (
    agent_fault,
    blocked_before_model,
    dead_server_block,
    env_code_errors,
    episode_lab,
    non_finite,
)
from vfcheck.checks._registry import check, family

family("robustness", order=90, summary="empty, huge, malformed and cut replies never crash env "
       "code.")


@check(
    "robustness", family="robustness", scope="sample", budget=4.5,
    contract="env code survives empty, whitespace, huge and malformed model output",
    fails_when="for an empty, whitespace or 100 kB reply, a malformed body, a cut stream, or a "
    "tool call with invalid JSON arguments: env code raises (a "
    "`TaskError`/`EnvError`/`ToolsetError` on the trace), a reward is not finite, or the runner "
    "fails",
    why="real models produce all of these",
)
async def robustness(ctx: CheckContext, task: Any) -> Finding:
    from vfcheck._model import HARNESS_BUILTIN_TOOLS, Reply, agent_only

    lab = await episode_lab(ctx)

    def bad_tool_call(request: Any) -> Any:
        if request.turn > 0:
            return None
        offered = [t.get("function", {}).get("name") for t in request.tools]
        names = [n for n in offered if n and n not in HARNESS_BUILTIN_TOOLS]
        return Reply.tool(names[0] if names else "vfcheck_probe", "{bad json")

    faults: dict[str, Callable[[Any], Any]] = {
        "empty reply": agent_fault(Reply.fault("empty")),
        "whitespace reply": agent_fault(Reply.text(" \n\t ")),
        "100 kB reply": agent_fault(Reply.fault("huge")),
        "malformed body": agent_fault(Reply.fault("malformed")),
        "cut stream": agent_fault(Reply.fault("cut")),
        "invalid tool-call JSON": agent_only(bad_tool_call),
    }
    names = list(faults)
    results = await asyncio.gather(*(lab.play_fault(task, faults[n]) for n in names))
    if (blocked := dead_server_block(results, task.data.idx)) is not None:
        return ctx.finding("robustness", task, "skipped", blocked)
    problems: dict[str, list[str]] = {}  # what broke -> the faults it broke on
    observed: dict[str, Any] = {}
    for name, result in zip(names, results, strict=True):
        found = env_code_errors(result)
        found += [f"{x} is not finite" for t in result.traces for x in non_finite(t)]
        if result.runner_error:
            found.append(f"the runner failed: {result.runner_error}")
        observed[name] = {"errors": result.errors(), "rewards": [
            t.reward for t in result.traces]}
        if exchanges := judge_exchanges(result.traces):
            observed[name]["judge_exchanges"] = exchanges
        if found:
            problems.setdefault(found[0], []).append(name)
    if problems:
        return ctx.finding("robustness", task, "failed", "env code broke on " + "; ".join(
            f"{listed(on)}: {what}" for what, on in problems.items()), faults=observed)
    if all(blocked_before_model(r) for r in results) and (
            blocked := blocked_before_model(await lab.first_play(task))) is not None:
        # no bad reply was ever sent: "survived" would be a pass for nothing
        return ctx.finding("robustness", task, "skipped",
                           f"blocked — {blocked}, so no bad reply reached env code (see "
                           f"episode[{task.data.idx}])", faults=observed)
    return ctx.finding("robustness", task, "passed",
                    f"env code survived {len(names)} kinds of bad model output",
                    faults=observed)


def listed(names: list[str]) -> str:
    """`a`, `a and b`, `a, b and c`."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
