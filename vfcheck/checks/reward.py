"""`reward.reachable`, `reward.sensitive`: the reward can be earned, and it moves.

Both read every probe played on the task (`vfcheck.checks._probes`): the reference answer in
each format tried (the best is the oracle), the oracle with judges answering `negative`,
the trivial policies (judges `negative`) and, without a reference answer, a claim of
success under both verdicts. An unscored play is never read as a 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vfcheck._shared.findings import Finding
from vfcheck.checks._alone_verdicts import SECOND_LOOK, settled
from vfcheck.checks._context import CheckContext
from vfcheck.checks._probes import (
    OracleChoice,
    ProbeLab,
    ProbeResult,
    errors_of,
    num,
    probe_lab,
    short,
    table_of,
)
from vfcheck.checks._registry import check, family

family("reward", order=110, summary="some probe earns a reward, and the reward moves with what "
       "the model does.")


async def all_results(ctx: CheckContext, task: Any
                      ) -> tuple[ProbeLab, dict[str, ProbeResult], OracleChoice | None]:
    """The probe lab, every play made for `task` (oracle first) and the oracle's formats."""
    lab = await probe_lab(ctx)
    choice = await lab.oracle_choice(task)
    verdicts = await lab.verdict_results(task, "positive", "negative")
    results = {r.probe: r for r in verdicts.values()}
    if choice is not None and len(choice.tried) > 1:
        results = {"oracle": results.pop("oracle"), **{r.probe: r for _, r in choice.tried},
                   **results}
    results.update(await lab.trivial_results(task))
    return lab, results, choice


def with_results(choice: OracleChoice | None, results: Mapping[str, ProbeResult]
                 ) -> OracleChoice | None:
    """`choice` with each format's play taken from `results` where it holds one (the best
    format's is `oracle`): the same choice, read from plays one at a time."""
    if choice is None:
        return None
    tried = []
    for fmt, result in choice.tried:
        again = results.get(result.probe) or (results.get("oracle") if fmt == choice.best
                                              else None)
        tried.append((fmt, again or result))
    return OracleChoice(choice.reference, tried, choice.best)


def probe_details(results: dict[str, ProbeResult], choice: OracleChoice | None = None
                  ) -> dict[str, Any]:
    """A probe finding's details: the table row, why a `-` cell is one, the oracle's format,
    the judges' labels, and every result."""
    details: dict[str, Any] = {"probes": table_of(results),
                               "results": [r.as_dict() for r in results.values()]}
    if errors := errors_of(results):
        details["probe_errors"] = errors
    if choice is not None:
        details["oracle_format"] = choice.best.describe()
    judges = {name: labels for r in results.values() for name, labels in r.judges.items()}
    if judges:
        details["judge_labels"] = judges
    return details


def not_scored(results: dict[str, ProbeResult]) -> str:
    """Why no probe of the task was scored (the first play's error)."""
    first = next(iter(results.values()))
    return f"no probe episode was scored ({first.describe()})"


def what(result: ProbeResult, choice: OracleChoice | None) -> str:
    """A play named for a message: `the reference answer in <answer> tags (data.answer)`."""
    if result.probe.startswith("oracle") and choice is not None:
        return (f"the reference answer {short(choice.reference.answer)!r} "
                f"({choice.reference.source}, {choice.best.describe()})")
    return f"probe {result.probe}"


@check(
    "reward.reachable", family="reward", scope="sample", budget=4.5,
    contract="some policy earns a reward above 0 on the task: its reference answer does",
    fails_when="no probe earns a reward above 0: not the reference answer in any format "
    "tried (the formats its prompt or system prompt names: tags, `\\boxed{}`, `####`, "
    "`Answer:` lines, JSON keys; then bare, `<answer>` tags, `\\boxed{}`, `Answer:`, `####`) "
    "with judges answering positive, nor any trivial policy or judge verdict; the message "
    "lists each format's reward and each reward function's value. Skipped, with the reason, "
    "when no probe was scored, or the task has no usable reference answer (none in the "
    "data, a plugged reference judge or the script; or a multi-turn or tool task whose "
    "answer as the final reply earns nothing, without a script `oracle`)" + SECOND_LOOK,
    why="a reward that is always 0 trains nothing: the gradient is zero on every rollout",
)
async def reachable(ctx: CheckContext, task: Any) -> Finding:
    lab, results, choice = await all_results(ctx, task)
    return await settled(lab, task, results, lambda played: _reachable(
        ctx, lab, task, dict(played), with_results(choice, played)))


def _reachable(ctx: CheckContext, lab: ProbeLab, task: Any, results: dict[str, ProbeResult],
               choice: OracleChoice | None) -> Finding:
    details = probe_details(results, choice)
    scored = [r for r in results.values() if r.seats]
    if not scored:
        return ctx.finding("reward.reachable", task, "skipped",
                           f"{not_scored(results)}; {lab.see_episode(task)}", **details)
    best = max(scored, key=lambda r: max(r.seats))
    if max(best.seats) > 0:
        return ctx.finding("reward.reachable", task, "passed",
                           f"{what(best, choice)} earns {best.describe()}", **details)
    oracle = results.get("oracle")
    if not lab.oracle_counts(task, oracle):
        return ctx.finding("reward.reachable", task, "skipped",
                           f"no probe earned a reward above 0, and {lab.oracle_gap(task, oracle)}",
                           **details)
    assert oracle is not None and choice is not None
    if oracle.reward is None:  # a harness or env failure: `episode` reports it
        return ctx.finding("reward.reachable", task, "skipped",
                           f"the reference answer's episode was not scored "
                           f"({oracle.describe()}; {lab.see_episode(task)})", **details)
    others = sorted({num(r.reward) for r in results.values()
                     if r.reward is not None and not r.probe.startswith("oracle")})
    return ctx.finding(
        "reward.reachable", task, "failed",
        f"the reference answer {short(choice.reference.answer)!r} ({choice.reference.source}), "
        f"judges answering positive, earned {oracle.describe()}: no format earns anything "
        f"(tried {choice.listing()}); every other probe earned {' or '.join(others) or '-'}. "
        "If the env reads its answer in another format, give the task an `oracle` in that "
        "format in the script (--script)", **details)


@check(
    "reward.sensitive", family="reward", scope="sample", budget=4.5,
    contract="the reward tells policies apart: the reference answer, trivial replies and "
    "judge verdicts do not all get the same reward",
    fails_when="every probe played on the task (the reference answer in each format, an "
    "empty reply, the echoed prompt and system prompt, a refusal, a bare claim of success, "
    "one-token judge attacks, a wrong answer, answer spam, tool spam; judges positive and "
    "negative) gets the same reward, whatever it is (0, 1, ...); the message names the "
    "value. Without a reference answer: only when that value is the reward's maximum "
    "(from its weights, or `--reward-max`). Skipped when no probe was scored" + SECOND_LOOK,
    why="a reward that never moves is a constant: the policy cannot learn from it",
)
async def sensitive(ctx: CheckContext, task: Any) -> Finding:
    lab, results, choice = await all_results(ctx, task)
    return await settled(lab, task, results, lambda played: _sensitive(
        ctx, lab, task, dict(played), with_results(choice, played)))


def _sensitive(ctx: CheckContext, lab: ProbeLab, task: Any, results: dict[str, ProbeResult],
               choice: OracleChoice | None) -> Finding:
    details = probe_details(results, choice)
    scored = {name: r.seats for name, r in results.items() if r.seats}
    if not scored:
        return ctx.finding("reward.sensitive", task, "skipped",
                           f"{not_scored(results)}; {lab.see_episode(task)}", **details)
    if len(scored) < 2:  # one play earns what it earns: that is no constant
        (only,) = scored
        unscored = [r for name, r in results.items() if name not in scored]
        return ctx.finding(
            "reward.sensitive", task, "skipped",
            f"only one probe was scored ({only}, {results[only].describe()}): nothing to "
            f"compare it with" + (f"; the other probes were not scored ({unscored[0].describe()}"
                                  f"; {lab.see_episode(task)})" if unscored else ""), **details)
    if len(set(scored.values())) > 1:
        values = [v for seats in scored.values() for v in seats]
        return ctx.finding("reward.sensitive", task, "passed",
                           f"{len(scored)} probes earn rewards from {num(min(values))} to "
                           f"{num(max(values))}", **details)
    value = ", ".join(num(v) for v in next(iter(scored.values())))
    oracle = results.get("oracle")
    if lab.oracle_counts(task, oracle):
        assert oracle is not None and choice is not None
        if not oracle.seats:
            return ctx.finding("reward.sensitive", task, "skipped",
                               f"the reference answer's episode was not scored "
                               f"({oracle.describe()}; {lab.see_episode(task)})", **details)
        return ctx.finding(
            "reward.sensitive", task, "failed",
            f"all {len(scored)} probes earned the same reward, {value} "
            f"({', '.join(scored)}), {what(oracle, choice)} too ({oracle.describe()}): a "
            "reward that never moves trains nothing"
            + (f", at {value} as at 0" if value != "0" else ""), **details)
    ceiling, source = lab.ceiling(list(results.values()))
    seats = {v for s in scored.values() for v in s}
    gap = lab.oracle_gap(task, oracle)
    if seats == {ceiling} and ceiling > 0:
        return ctx.finding(
            "reward.sensitive", task, "failed",
            f"all {len(scored)} probes earned {value} ({', '.join(scored)}), the reward's "
            f"maximum ({source}): an empty reply earns what any reply can, so the reward "
            f"cannot tell replies apart (and there is no reference answer: {gap})", **details)
    hint = ("as trivial replies should" if seats == {0.0}
            else "and a reply that does the task may earn more")
    return ctx.finding(
        "reward.sensitive", task, "skipped",
        f"every probe earns {value}, {hint}; there is no reference answer to compare: {gap}",
        **details)
