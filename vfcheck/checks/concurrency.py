"""`concurrency`: episodes played at once score and trace as the same episodes played one at
a time.

A trainer plays a group of rollouts of each task at once, beside other tasks' groups, in
one env process. Module globals and class attributes of env code are shared by all of
them: a hook that keeps an episode's reply there for its reward to read scores one rollout
on another's reply, and every other check, which sees one episode's outcome at a time,
passes. So each sampled task is played as a group (`--group-size`, its episodes all in
flight together, `EpisodeLab.play_group`; the run's other checks and tasks play beside
it), its episodes alternating the reference answer (else the run's script) and an empty
reply, and each episode is compared with the same policy played with nothing else of the
env in flight (`EpisodeLab.alone_plays`, shared with the probes' second look:
`vfcheck.checks._alone_verdicts`). Comparison: `vfcheck.checks._interference`.
"""

from __future__ import annotations

from typing import Any

from vfcheck._shared.findings import Finding
from vfcheck.checks._context import CheckContext
from vfcheck.checks._interference import Played, as_rows, changes, compare, described
from vfcheck.checks._lab import (
    blocked_before_model,
    dead_server_block,
    normalized_views,
    unfinished_plays,
)
from vfcheck.checks._probes import ProbeLab, probe_lab
from vfcheck.checks._registry import check, family

family("concurrency", order=97, summary="a group of episodes played at once, as a trainer "
       "plays them, scores and traces as the same episodes one at a time.")


async def seats(lab: ProbeLab, task: Any) -> dict[str, Any]:
    """The group's policies by name, two that reply differently: the reference answer in
    its best format (judges positive), else the run's script (None); and an empty reply
    (judges negative). Named as the probe lab names them, so that their plays one at a time
    are shared."""
    choice = await lab.oracle_choice(task)
    empty = lab.probe("empty", task)
    assert empty is not None
    first: dict[str, Any] = {"default": None}
    if choice is not None:
        oracle = lab.format_probe("oracle", "positive", choice.best, choice.reference.answer)
        first = {"oracle": lab.policy_of(task, oracle)}
    return {**first, "empty": lab.policy_of(task, empty)}


@check(
    "concurrency", family="concurrency", scope="sample", budget=4.5,
    contract="episodes of a task played at once (a group of rollouts, as a trainer plays "
    "them) score and trace as the same scripted episodes played one at a time",
    fails_when="an episode of the task's group, played at once (`--group-size` episodes, "
    "alternating the reference answer, else the run's script, and an empty reply), differs "
    "from the same policy's episode played with nothing else of the env in flight, after "
    "normalisation: a reward or metric, the stop condition, an error, or any other field of "
    "the trace; the message names the episode, its reply, the field and both values. "
    "Skipped when the same episode played twice one at a time differs too (see "
    "determinism.replay)",
    why="a trainer plays many rollouts in one env process: state one episode keeps where "
    "another sees it (a module-level dict, a class attribute) scores one rollout on "
    "another's reply",
)
async def concurrency(ctx: CheckContext, task: Any) -> Finding:
    probes = await probe_lab(ctx)
    lab, index = probes.lab, task.data.idx
    policies = await seats(probes, task)
    names = list(policies)
    order = [names[i % len(names)] for i in range(ctx.options.group_size)]
    group = await lab.play_group(task, [policies[name] for name in order])
    if all(blocked_before_model(r) for r in group) and (
            blocked := blocked_before_model(await lab.first_play(task))) is not None:
        # every episode ended before its first model request: nothing to play alone for
        return ctx.finding("concurrency", task, "skipped",
                           f"blocked — {blocked}, so no reply reached env code at once "
                           f"(see episode[{index}])")
    alone = await lab.alone_plays(task, policies)
    plays = [*group, *alone.values()]
    if (dead := dead_server_block(plays, index)) is not None:
        return ctx.finding("concurrency", task, "skipped", dead)
    if (blocked := unfinished_plays(plays, index)) is not None:
        return ctx.finding("concurrency", task, "failed", blocked)
    if all(blocked_before_model(r) for r in plays):  # every play alike, and for nothing
        return ctx.finding("concurrency", task, "skipped",
                           f"blocked — {blocked_before_model(plays[0])}, so no reply reached "
                           f"env code at once or one at a time (see episode[{index}])")
    at_once = [Played(name, normalized_views(r)) for name, r in zip(order, group, strict=True)]
    one_at_a_time = {name: Played(name, normalized_views(r)) for name, r in alone.items()}
    found = compare(at_once, one_at_a_time)
    replies = {name: played.reply for name, played in one_at_a_time.items()}
    if not found:
        return ctx.finding(
            "concurrency", task, "passed",
            f"{len(group)} episodes played at once (policies {', '.join(order)}) score and "
            "trace as they do one at a time", replies=replies)
    moved = sorted({order[number] for number, _ in found})
    again = await lab.alone_plays(task, {f"{name} again": policies[name] for name in moved})
    for name in moved:
        second = Played(name, normalized_views(again[f"{name} again"]))
        if (unsteady := changes(second, one_at_a_time[name])):
            first = unsteady[0]
            return ctx.finding(
                "concurrency", task, "skipped",
                f"the {name} episode played twice one at a time differs too ({first.label}: "
                f"{first.alone}, then {first.at_once}), so episodes at once cannot be told "
                f"from episodes one at a time; see determinism.replay[{index}]",
                differences=as_rows(found))
    return ctx.finding("concurrency", task, "failed", described(at_once, one_at_a_time, found),
                       differences=as_rows(found), replies=replies)
