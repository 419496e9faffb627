"""A probe verdict that would fail is looked at again, from plays one at a time.

The probe families play their episodes at once, as a trainer does. An env that keeps an
episode's state where its other episodes see it (a module-level dict, a class attribute)
scores one rollout on another's reply there: a right reply earns 0 next to a wrong one, and
a probe verdict read from those plays would call a live reward dead, or a trivial policy
rewarded. So before a probe verdict fails, the probes it rests on are played again one at a
time (`ProbeLab.alone_results`, nothing else of the env in flight). Where they score
differently, the verdict is the one the plays one at a time give, and its message says that
episodes at once disagreed, pointing to `concurrency[i]`, the family that names the shared
state.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from typing import Any

from vfcheck._shared.findings import Finding
from vfcheck.checks._probe_results import ProbeResult, num

SECOND_LOOK = (". Before it fails, the probes the verdict rests on are played again one at a "
               "time, and decide where they score differently from the plays at once")
"""What each probe check's `fails_when` says of this."""


def moved(at_once: Mapping[str, ProbeResult], alone: Mapping[str, ProbeResult]) -> list[str]:
    """`probe wrong-answer: reward 1 at once, 0 one at a time` for each probe whose reward
    (or whether it was scored) differs between the two plays; NaN equals NaN."""
    lines = []
    for key, first in at_once.items():
        second = alone.get(key)
        if second is None or _same(first, second):
            continue
        lines.append(f"probe {first.probe}: {_value(first)} at once, {_value(second)} one at "
                     "a time")
    return lines


def _same(first: ProbeResult, second: ProbeResult) -> bool:
    return (json.dumps([first.reward, first.rewards], sort_keys=True, default=str)
            == json.dumps([second.reward, second.rewards], sort_keys=True, default=str))


def _value(result: ProbeResult) -> str:
    if result.reward is None:
        return "not scored"
    parts = ", ".join(f"{k}={num(v)}" for k, v in result.rewards.items())
    return f"reward {num(result.reward)}" + (f" ({parts})" if parts else "")


def note(message: str, lines: list[str], index: int) -> str:
    """`message` (a verdict from plays one at a time) saying that the plays at once
    disagreed, and how."""
    shown = "; ".join(lines[:3]) + (f" (+{len(lines) - 3} more)" if len(lines) > 3 else "")
    said = (f"episodes at once disagreed with the same episodes one at a time ({shown}): "
            f"this verdict is from the plays one at a time; state shared between episodes? "
            f"see concurrency[{index}]")
    if message.endswith("."):
        return f"{message} {said[0].upper()}{said[1:]}."
    return f"{message}; {said}"


async def settled(lab: Any, task: Any, results: Mapping[str, ProbeResult],
                  decide: Callable[[Mapping[str, ProbeResult]], Finding]) -> Finding:
    """`decide(results)`, unless it fails and the probes of `results`, played again one at
    a time (`lab`: the `ProbeLab`), score differently: then `decide` of those, noting it. A
    failure the user allowed is not looked at again: it is accepted whatever its plays."""
    from vfcheck._options.allow import matching

    finding = decide(results)
    if finding.outcome != "failed" or (
            lab.ctx.options.allow and matching(lab.ctx.env_id, finding, lab.ctx.options.allow)):
        return finding
    alone = await lab.alone_results(task, results)
    changed = moved(results, alone)
    if not changed:
        return finding
    second = decide({**results, **alone})
    return dataclasses.replace(
        second, message=note(second.message, changed, task.data.idx),
        details={**second.details, "at_once": {"verdict": finding.outcome,
                                               "message": finding.message,
                                               "moved": changed}})
