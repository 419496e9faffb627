"""`reward.reachable`, `reward.sensitive`: the reward can be earned, and it moves.

Both read the probe results (`vfcheck.checks.probes`): the oracle (the task's reference
answer, judges answering `positive`), the oracle with judges answering `negative`, and the
trivial policies (judges `negative`).
"""

from __future__ import annotations

from typing import Any

from vfcheck.checks.context import CheckContext
from vfcheck.checks.probes import ProbeResult, num, probe_lab, short, table_of
from vfcheck.checks.registry import check
from vfcheck.findings import Finding


async def all_results(ctx: CheckContext, task: Any) -> tuple[Any, dict[str, ProbeResult]]:
    """The probe lab and every probe result of `task`, oracle first."""
    lab = await probe_lab(ctx)
    results: dict[str, ProbeResult] = {}
    oracle = await lab.oracle_result(task)
    if oracle is not None:
        results["oracle"] = oracle
        if oracle.judge_calls:
            negative = await lab.oracle_result(task, "negative")
            assert negative is not None
            results[negative.probe] = negative
    results.update(await lab.trivial_results(task))
    return lab, results


def probe_details(results: dict[str, ProbeResult]) -> dict[str, Any]:
    """A probe finding's details: the table row and every result."""
    return {"probes": table_of(results), "results": [r.as_dict() for r in results.values()]}


@check(
    "reward.reachable", family="reward", scope="sample", budget=4.5,
    contract="some policy earns a reward above 0 on the task: its reference answer does",
    fails_when="no probe (the reference answer with judges answering positive, nor any "
    "trivial policy) earns a reward above 0; the message names each reward function and what "
    "it returned. Skipped, with the reason, when the task has no usable reference answer "
    "(none in the data, a plugged reference judge or the script; or a multi-turn or tool "
    "task without a script `oracle`)",
    why="a reward that is always 0 trains nothing: the gradient is zero on every rollout",
)
async def reachable(ctx: CheckContext, task: Any) -> Finding:
    lab, results = await all_results(ctx, task)
    details = probe_details(results)
    best = max(results.values(), key=lambda r: max(r.seats, default=-1.0))
    if max(best.seats, default=0.0) > 0:
        return ctx.finding("reward.reachable", task, "passed",
                           f"{best.probe} earns {best.describe()}", **details)
    oracle = results.get("oracle")
    if not lab.oracle_counts(task, oracle):
        return ctx.finding("reward.reachable", task, "skipped",
                           f"no probe earned a reward above 0, and {lab.oracle_gap(task, oracle)}",
                           **details)
    assert oracle is not None
    if oracle.reward is None:  # a harness or env failure: `episode` reports it
        return ctx.finding("reward.reachable", task, "skipped",
                           f"the reference answer's episode was not scored "
                           f"({oracle.describe()}; see episode[{task.data.idx}])", **details)
    others = sorted({num(r.reward) for r in results.values() if r is not oracle})
    return ctx.finding(
        "reward.reachable", task, "failed",
        f"the reference answer {short(oracle.reply)!r} ({lab.source(task)}), judges answering "
        f"positive, earned {oracle.describe()}; every other probe earned {' or '.join(others)}",
        **details)


@check(
    "reward.sensitive", family="reward", scope="sample", budget=4.5,
    contract="the reward tells policies apart: the reference answer, trivial replies and "
    "judge verdicts do not all get the same reward",
    fails_when="every probe played on the task (the reference answer, an empty reply, the "
    "echoed prompt and system prompt, a refusal, a bare claim of success, one-token judge "
    "attacks, all reference answers at once, tool spam; judges positive and negative) gets "
    "the same reward. Skipped when no probe was scored",
    why="a reward that never moves is a constant: the policy cannot learn from it",
)
async def sensitive(ctx: CheckContext, task: Any) -> Finding:
    lab, results = await all_results(ctx, task)
    details = probe_details(results)
    scored = {name: r.seats for name, r in results.items() if r.seats}
    if not scored:
        first = next(iter(results.values()))
        return ctx.finding("reward.sensitive", task, "skipped",
                           f"no probe episode was scored ({first.describe()}; see "
                           f"episode[{task.data.idx}])", **details)
    if len(set(scored.values())) > 1:
        values = [v for seats in scored.values() for v in seats]
        return ctx.finding("reward.sensitive", task, "passed",
                           f"{len(scored)} probes earn rewards from {num(min(values))} to "
                           f"{num(max(values))}", **details)
    oracle = results.get("oracle")
    if oracle is not None and lab.oracle_counts(task, oracle) and not oracle.seats:
        return ctx.finding("reward.sensitive", task, "skipped",
                           f"the reference answer's episode was not scored "
                           f"({oracle.describe()}; see episode[{task.data.idx}])", **details)
    if oracle is None or not lab.oracle_counts(task, oracle):
        return ctx.finding(
            "reward.sensitive", task, "skipped",
            f"every trivial probe earns the same ({num(next(iter(results.values())).reward)}), "
            f"as it should, and with no reference answer to compare: "
            f"{lab.oracle_gap(task, oracle)}", **details)
    return ctx.finding(
        "reward.sensitive", task, "failed",
        f"all {len(scored)} probes earned the same rewards ({', '.join(scored)}), the "
        f"reference answer {short(oracle.reply)!r} too: {oracle.describe()}", **details)
