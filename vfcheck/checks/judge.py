"""`judge.wiring`, `judge.garbage`, `judge.skipped`: the env's LLM judge is wired the right
way round, an unreadable verdict errors the rollout instead of scoring it, and the reward
does not score without its judge when the API key is missing.

The scripted model answers the env's own judge calls (`vfcheck._model`, attributed to the
episode being scored) with the verdict each probe asks for. The same agent reply (the
reference answer, else a bare claim of success) is scored three times: judges answering
positive, negative, and with a reply that is neither label. verifiers' reference judge
raises on the last ("a judge failure must error the rollout, not score the model 0"); a
parser that reads anything but a leading "yes" as 0 scores it silently, and every judge
outage then reads as a wrong answer. Envs that make no judge call are skipped, naming why.
`judge.skipped` plays the same reply once more with the judge's key set where the env
declares a judge that no play called (`vfcheck.checks._judge_keys`).
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from vfcheck._shared.findings import Finding
from vfcheck.checks._alone_verdicts import SECOND_LOOK, settled
from vfcheck.checks._context import CheckContext
from vfcheck.checks._probes import ProbeResult, errors_of, num, probe_lab, short
from vfcheck.checks._registry import check, family

family("judge", order=130, summary="a judge is wired the right way round, errors on an "
       "unreadable verdict, and is called with no API key too.")

NO_JUDGE = ("the env made no judge call while scoring (no vf.Judge, plugged judge or in-env "
            "OpenAI client reached the model endpoint)")


def no_judge_call(results: dict[str, ProbeResult]) -> str | None:
    """Why `judge.*` is skipped: no judge call, or no scoring to make one in; else None."""
    if any(r.judge_calls for r in results.values()):
        return None
    first = next(iter(results.values()))
    if first.reward is None:
        return (f"the probe episode was not scored ({first.describe()}), so whether the env "
                "calls a judge while scoring is unknown")
    return NO_JUDGE


def judge_details(results: dict[str, ProbeResult]) -> dict[str, Any]:
    details: dict[str, Any] = {"results": [r.as_dict() for r in results.values()],
                               "probes": {r.probe: r.reward for r in results.values()}}
    judges = {name: labels for r in results.values() for name, labels in r.judges.items()}
    if judges:
        details["judge_labels"] = judges
    if errors := errors_of(results):
        details["probe_errors"] = errors
    return details


def labels_used(results: dict[str, ProbeResult]) -> str:
    """`judge 'vfc-judge' in yes/no (its prompt)`, for messages."""
    judges = {name: labels for r in results.values() for name, labels in r.judges.items()}
    return "; ".join(f"judge {name!r} answered in {labels}" for name, labels in judges.items())


@check(
    "judge.wiring", family="judge", scope="sample", budget=4.5,
    contract="a positive judge verdict earns more reward than a negative one, and a readable "
    "verdict never errors the rollout",
    fails_when="with the same reply, the judge answering positive earns no more than answering "
    "negative, or a positive or negative verdict makes scoring raise. Skipped for envs that "
    "make no judge call" + SECOND_LOOK,
    why="a judge wired backwards, or to the wrong field, rewards the wrong answers",
)
async def wiring(ctx: CheckContext, task: Any) -> Finding:
    lab = await probe_lab(ctx)
    results = await lab.verdict_results(task, "positive", "negative")
    return await settled(lab, task, results, lambda played: _wiring(ctx, task, dict(played)))


def _wiring(ctx: CheckContext, task: Any, results: dict[str, ProbeResult]) -> Finding:
    details = judge_details(results)
    if (reason := no_judge_call(results)) is not None:
        return ctx.finding("judge.wiring", task, "skipped", reason, **details)
    positive, negative = results["positive"], results["negative"]  # both: it judged
    for kind, result in results.items():
        if result.errors or result.reward is None:
            return ctx.finding(
                "judge.wiring", task, "failed",
                f"a {kind} verdict on reply {short(result.reply)!r} made the rollout error: "
                f"{result.describe()} ({labels_used(results)})", **details)
    assert positive.reward is not None and negative.reward is not None
    if positive.reward > negative.reward:
        return ctx.finding("judge.wiring", task, "passed",
                           f"positive verdict {num(positive.reward)} > negative "
                           f"{num(negative.reward)} ({positive.judge_calls} judge call(s); "
                           f"{labels_used(results)})",
                           **details)
    return ctx.finding(
        "judge.wiring", task, "failed",
        f"reply {short(positive.reply)!r} earned {positive.describe()} with the judge "
        f"answering positive and {negative.describe()} answering negative "
        f"({labels_used(results)})", **details)


@check(
    "judge.garbage", family="judge", scope="sample", budget=4.5,
    contract="a judge verdict that is neither label errors the rollout instead of being scored",
    fails_when="the judge answering with neither of its labels (or an object its schema "
    "rejects) is scored silently, with no error on the trace. Skipped for envs that make no "
    "judge call" + SECOND_LOOK,
    why="a judge outage or a rambling verdict scored as 0 punishes the model for the judge's "
    "failure, silently",
)
async def garbage(ctx: CheckContext, task: Any) -> Finding:
    lab = await probe_lab(ctx)
    results = await lab.verdict_results(task, "positive", "garbage")
    return await settled(lab, task, results, lambda played: _garbage(ctx, task, dict(played)))


def _garbage(ctx: CheckContext, task: Any, results: dict[str, ProbeResult]) -> Finding:
    details = judge_details(results)
    if (reason := no_judge_call(results)) is not None:
        return ctx.finding("judge.garbage", task, "skipped", reason, **details)
    result = results["garbage"]
    if result.errors or result.reward is None:
        return ctx.finding("judge.garbage", task, "passed",
                           f"an unreadable verdict errored the rollout ({result.describe()})",
                           **details)
    return ctx.finding(
        "judge.garbage", task, "failed",
        f"the judge answered with neither label ({result.judge_calls} call(s)) and reply "
        f"{short(result.reply)!r} was scored {result.describe()}, with no error: the judge's "
        "parser reads an unreadable verdict as a score (verifiers' reference judge raises: "
        "\"a judge failure must error the rollout, not score the model 0\")", **details)


@check(
    "judge.skipped", family="judge", scope="sample", budget=4.5,
    contract="a reward that declares an LLM judge calls it with no API key set too, rather "
    "than scoring another signal when the key is missing",
    fails_when="the env declares a judge (a `vf.Judge` subclass in its modules, or a "
    "`vf.JudgeConfig` on its task config), its reward made no judge call while scoring the "
    "task's base reply (the reference answer, else a claim of success), and the same reply "
    "played with the judge config's `api_key_var` pointed at a variable vfcheck sets (the "
    "scripted model answering as the judge) does call it: what the reward means depends on "
    "an API key. The message names the reward, the `if` that skips the judge (file:line and "
    "condition, where its source shows it) and the rewards with and without a key. Skipped "
    "where the env declares no judge, where its judge config is not on the task config (the "
    "skipping `if` is still named), or where no play called the judge",
    why="a reward that falls back to another score without a key trains on that other "
    "signal wherever the key is missing, and every judge check then tests the fallback",
)
async def skipped(ctx: CheckContext, task: Any) -> Finding:
    from vfcheck.checks._judge_keys import KEYED_VAR, declared_judges, keyed_task, skip_sites

    declared = declared_judges(task)
    if not declared:
        return ctx.finding("judge.skipped", task, "skipped",
                           "the env declares no judge (no vf.Judge subclass in its modules, "
                           "no vf.JudgeConfig or plugged judge on its task config)")
    lab = await probe_lab(ctx)
    base = (await lab.verdict_results(task, "positive"))["positive"]
    details: dict[str, Any] = {"declared": declared.named(), "results": [base.as_dict()]}
    if base.judge_calls:
        return ctx.finding("judge.skipped", task, "passed",
                           f"{declared.named()}: the reward called its judge with no API key "
                           f"set ({base.judge_calls} call(s))", **details)
    if base.reward is None:
        return ctx.finding("judge.skipped", task, "skipped",
                           f"the probe episode was not scored ({base.describe()}), so whether "
                           "the reward calls its judge is unknown", **details)
    sites = skip_sites(task)
    details["skip_sites"] = [site.describe() for site in sites]
    named = "; ".join(site.describe() for site in sites)
    if not declared.configs:
        return ctx.finding(
            "judge.skipped", task, "skipped",
            f"the env declares {declared.named()}, and no play called it"
            f"{f'; {named}' if named else ''}; no vf.JudgeConfig is on its task config, so "
            "vfcheck cannot play it with an API key to compare", **details)
    keyed = keyed_task(task, declared.configs)
    probes = [dataclasses.replace(p, name=with_key(p.name)) for p in
              [await lab.base_probe(task, kind) for kind in ("positive", "negative")]]
    positive, negative = await asyncio.gather(*(lab.play(keyed, p) for p in probes))
    details["results"] += [positive.as_dict(), negative.as_dict()]
    details["probes"] = {r.probe: r.reward for r in (base, positive, negative)}
    if not (positive.judge_calls or negative.judge_calls):
        return ctx.finding(
            "judge.skipped", task, "skipped",
            f"the env declares {declared.named()}, and no play called it, with its API key "
            f"set ({declared.key_vars()}) or not{f'; {named}' if named else ''}", **details)
    moved = [name for name, score in positive.rewards.items()
             if score != negative.rewards.get(name)] or [
        name for name, score in positive.rewards.items() if score != base.rewards.get(name)]
    sites = skip_sites(task, moved) or sites
    where = ("; ".join(site.describe() for site in sites) if sites else
             f"reward {', '.join(moved) or '?'} reads the judge only with a key (no `if` "
             "naming a key was found before its judge call)")
    copied = [f"{name} scores {num(base.rewards[name])}, {other}'s score"
              for name in moved if base.rewards.get(name) is not None
              for other, score in base.rewards.items()
              if other != name and score == base.rewards[name]][:2]
    return ctx.finding(
        "judge.skipped", task, "failed",
        f"{declared.named()}: its reward made no judge call with {declared.key_vars()} "
        f"unset, and {positive.judge_calls or negative.judge_calls} with a key (the config's "
        f"api_key_var pointed at {KEYED_VAR}, which vfcheck sets; the scripted model "
        f"answering as the judge): {where}; reply {short(base.reply)!r} earned "
        f"{base.describe()} without a key, {positive.describe()} with it and the judge "
        f"answering positive, {negative.describe()} answering negative"
        + (f" (without a key {'; '.join(copied)})" if copied else ""), **details)


def with_key(probe: str) -> str:
    """`oracle+key/negative` for `oracle/negative`: a keyed play's probe name."""
    reply, _, verdict = probe.partition("/")
    return f"{reply}+key" + (f"/{verdict}" if verdict else "")
