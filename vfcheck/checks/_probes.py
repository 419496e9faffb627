"""Reward probes: play each sampled task under a set of policies and read the reward.

An RL env exists to hand out rewards, and the bugs that matter are invisible to every other
check: a reward that is always 0, a prompt that gives the answer away, a judge parser that
scores an unreadable verdict as 0. A *probe* is one episode of a task under one agent policy
and one judge verdict (`vfcheck._model` answers the env's own judge calls, attributed to the
episode); its *result* is what the task's scoring made of it. Three families read the same
memoised results: `reward.*` (is the reward reachable and does it move), `exploit.*` (does a
trivial policy earn what the reference answer earns), `judge.*` (is the judge wired the right
way round, and does an unreadable verdict error the rollout).

The *oracle* is the task's reference answer (`vfcheck.checks._reference_answer`) played in
the best-scoring of the formats its prompt names (`vfcheck.checks._answer_formats`). A
field is one fixed reply, so on a multi-turn or tool task it is a fair reference only
where it earns something as the final reply; elsewhere the script must give it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from vfcheck._host.attempts import deadline_hit
from vfcheck._host.crash_site import located_error
from vfcheck.checks._answer_formats import BARE, SCRIPT, AnswerFormat, candidate_formats
from vfcheck.checks._judge_calls import judge_exchanges
from vfcheck.checks._lab import episode_lab
from vfcheck.checks._probe_results import (
    OracleChoice,
    Probe,
    ProbeResult,
    Verdict,
    errors_of,
    fixed_reply,
    num,
    reply_of,
    said,
    scored_trace,
    short,
    table_of,
)
from vfcheck.checks._reference_answer import (
    ORACLE_FIELDS,
    Reference,
    other_answers,
    reference_of,
    wrong_answer,
)
from vfcheck.checks._trivial_probes import TRIVIAL_PROBES, prompt_text, system_text, trivial_probe

if TYPE_CHECKING:
    from vfcheck.checks._context import CheckContext

__all__ = [
    "OracleChoice", "Probe", "ProbeLab", "ProbeResult", "Verdict", "errors_of", "fixed_reply",
    "num", "probe_lab", "short", "table_of",
]


class ProbeLab:
    """Memoised probe episodes of one env run, played through the episode lab."""

    def __init__(self, ctx: CheckContext, lab: Any) -> None:
        self.ctx = ctx
        self.lab = lab
        self._plays: dict[tuple[int, str], asyncio.Future[ProbeResult]] = {}
        self._oracles: dict[int, asyncio.Future[OracleChoice | None]] = {}
        self._others: dict[int, tuple[list[str], str | None]] = {}
        self._probes: dict[tuple[int, str], Probe] = {}
        """Each probe played, by task and name: what `alone_results` plays again."""
        self.reward_max: float | None = ctx.options.reward_max
        """`--reward-max`, if given: it wins over the env's reward weights."""

    # -- the reference answer

    def reference(self, task: Any) -> Reference | None:
        return reference_of(self.ctx, task)

    def source(self, task: Any) -> str:
        reference = self.reference(task)
        return reference.source if reference is not None else "none"

    async def oracle_choice(self, task: Any) -> OracleChoice | None:
        """The reference answer played in each candidate format (memoised), or None
        without one."""
        index = task.data.idx
        if index not in self._oracles:
            self._oracles[index] = asyncio.ensure_future(self._choose_format(task))
        return await asyncio.shield(self._oracles[index])

    async def _choose_format(self, task: Any) -> OracleChoice | None:
        reference = self.reference(task)
        if reference is None:
            return None
        if reference.scripted:
            batches: list[list[AnswerFormat]] = [[SCRIPT]]
        else:
            batches = list(candidate_formats([system_text(task), prompt_text(task)]))
        tried: list[tuple[AnswerFormat, ProbeResult]] = []
        for batch in batches:
            played = await asyncio.gather(*(self.play(task, self.format_probe(
                f"oracle[{fmt.key}]", "positive", fmt, reference.answer)) for fmt in batch))
            tried += zip(batch, played, strict=True)
            best = max(tried, key=lambda item: _rank(item[1]))
            top = best[1].reward
            if top is not None and top >= self.ceiling([r for _, r in tried])[0]:
                break  # nothing can earn more: the other formats would only cost episodes
            if any(r.env_tools or r.turns > 1 for _, r in tried):
                break  # a fixed reply is weak evidence there, and a tool episode costs an
                # interpreter per tool server: the task's own formats only
        best_format = max(tried, key=lambda item: _rank(item[1]))[0]
        choice = OracleChoice(reference, tried, best_format)
        oracle = dataclasses.replace(choice.result, probe="oracle")
        self._plays[(task.data.idx, "oracle")] = _done(oracle)
        self._probes[(task.data.idx, "oracle")] = self.format_probe(
            "oracle", "positive", best_format, reference.answer)
        return choice

    def oracle_format(self, task: Any) -> AnswerFormat:
        """The oracle's format (after `oracle_choice`), BARE before it or without one."""
        future = self._oracles.get(task.data.idx)
        choice = future.result() if future is not None and future.done() else None
        return choice.best if choice is not None else BARE

    def format_probe(self, name: str, judge: Verdict, fmt: AnswerFormat, answer: str) -> Probe:
        reply = fmt.render(answer)
        return Probe(name, judge, fixed_reply(reply), reply, format=fmt.describe())

    async def oracle_result(self, task: Any, judge: Verdict = "positive") -> ProbeResult | None:
        """The oracle's play with judges answering `judge` (the best format's)."""
        choice = await self.oracle_choice(task)
        if choice is None:
            return None
        name = "oracle" if judge == "positive" else f"oracle/{judge}"
        return await self.play(task, self.format_probe(name, judge, choice.best,
                                                       choice.reference.answer))

    def oracle_counts(self, task: Any, result: ProbeResult | None) -> bool:
        """Whether the oracle's episode is a fair reference: a scripted oracle always; a
        field's one fixed reply for one chat turn with no env tools, or, on a multi-turn or
        tool task, where it earned something as the final reply. Never a reply that earned
        nothing on a reward no reply can move (its rewards read only the runtime): a script's
        `oracle` there is text the reward never reads."""
        reference = self.reference(task)
        if reference is None or result is None:
            return False
        earned = bool(result.reward and result.reward > 0)
        if reply_blind(task) and not earned:
            return False
        one_turn = result.turns <= 1 and not result.env_tools
        return reference.scripted or one_turn or earned

    def gold_passed(self, task: Any) -> bool:
        """Whether this run's `gold` check passed on `task` (`Task.validate` accepted the
        reference solution, applied in the runtime): evidence the work reaches the reward."""
        return self.ctx.outcomes.get(("gold", task.data.idx)) == "passed"

    def see_episode(self, task: Any) -> str:
        """Where an unscored probe's reader should look: `see episode[N]`, unless episode[N]
        passed (played with vfcheck's default reply), which would explain nothing: then
        that the env rejects these replies, not every reply."""
        index = task.data.idx
        if self.ctx.outcomes.get(("episode", index)) != "passed":
            return f"see episode[{index}]"
        reference = self.reference(task)
        hint = ("" if reference is not None and reference.scripted else
                ", and a script `oracle` in that shape (--script) gives the probes a reference")
        return (f"episode[{index}] passed with vfcheck's default reply, so the env rejects "
                f"these replies, not every reply: its error above says what shape it asks "
                f"for{hint}")

    def oracle_gap(self, task: Any, result: ProbeResult | None) -> str:
        """Why the task has no usable oracle, for skip reasons and messages. Where no reply can
        move the reward, no script `oracle` is suggested (one could only earn nothing), and
        a passing gold check is named as the evidence that the work reaches it."""
        reference = self.reference(task)
        blind = reply_blind(task)
        env_tools = result.env_tools if result is not None else []
        if blind:
            work = ("only the work reaches it (a script that does it through the tools, on "
                    "the env's own harness: --harness env)")
            gold = ("; gold passed on this task: Task.validate accepts the reference solution "
                    "applied in the runtime, so the work can reach the reward"
                    if self.gold_passed(task) else "")
            played = ("" if reference is None or result is None else
                      f"; its reference answer ({reference.source}) as the reply earned "
                      f"{num(result.reward)}")
            return (f"no reply can earn this reward: its rewards {', '.join(blind)} read the "
                    f"runtime, never the trace{played}, so {work}{gold}")
        if reference is None:
            return ("the task has no data field "
                    f"{'/'.join(ORACLE_FIELDS)}, no plugged reference judge, and the script "
                    "gives no `oracle` for it")
        assert result is not None
        shape = (f"offers env tools ({', '.join(env_tools)})" if env_tools
                 else f"plays {result.turns} model turns")
        return (f"the task {shape}, and its reference answer ({reference.source}) as the "
                f"reply earned {num(result.reward)}, so it is no reference answer: the task "
                f"may need the work itself; give the task an `oracle` in the script (--script)")

    def ceiling(self, results: list[ProbeResult]) -> tuple[float, str]:
        """The reward's maximum and where it comes from: `--reward-max`; else the sum of the
        reward weights scoring recorded (when every score seen lies in [0, 1]); else 1."""
        if self.reward_max is not None:
            return float(self.reward_max), "--reward-max"
        weights: dict[str, float] = {}
        for result in results:
            weights.update(result.weights)
        scores = [v for r in results for v in r.rewards.values() if v is not None]
        if weights and all(0.0 <= v <= 1.0 for v in scores):
            total = sum(w for w in weights.values() if w > 0)
            parts = ", ".join(f"{k}={num(w)}" for k, w in weights.items())
            return total, f"the sum of its reward weights: {parts}"
        return 1.0, "the default; give --reward-max"

    # -- playing

    async def play(self, task: Any, probe: Probe) -> ProbeResult:
        key = (task.data.idx, probe.name)
        self._probes.setdefault(key, probe)
        if key not in self._plays:
            # a declared judge will be called: waiting for the other verdict's play would
            # only put this one a whole episode late
            same_reply = [] if getattr(task.config, "judges", None) else [
                future for (index, name), future in self._plays.items()
                if index == key[0] and reply_of(name) == reply_of(probe.name)]
            self._plays[key] = asyncio.ensure_future(self._reuse_or_play(task, probe,
                                                                         same_reply))
        result = await asyncio.shield(self._plays[key])
        if result.unfinished:  # each check that reads it is confirmed before it fails
            deadline_hit(result.runner_error or "the episode's deadline")
        return result

    def forget(self, index: int) -> None:
        """Drop the memoised probes of task `index` (`EpisodeLab.forget`)."""
        for key in [k for k in self._plays if k[0] == index]:
            del self._plays[key]
            self._probes.pop(key, None)
        self._oracles.pop(index, None)

    async def _reuse_or_play(self, task: Any, probe: Probe,
                             same_reply: list[asyncio.Future[ProbeResult]]) -> ProbeResult:
        """An episode of the same reply under another judge verdict (`claim` for
        `claim/positive`), if one made no judge call: the verdict cannot have mattered,
        and a tool env's episode costs an interpreter per tool server. Else a new play."""
        for earlier in same_reply:
            result = await asyncio.shield(earlier)
            if not result.judge_calls and result.runner_error is None:
                return dataclasses.replace(result, probe=probe.name, judge=probe.judge)
        return await self._play(task, probe)

    def policy_of(self, task: Any, probe: Probe) -> Any:
        """The scripted model's policy of `probe` on `task`: its judge verdict first (in the
        labels a plugged judge declares), then its agent policy."""
        from vfcheck._model import first_of, judge_policy

        return first_of(judge_policy(probe.judge, labels=self.judge_labels(task),
                                     example=self.ctx.script_judge_reply(task)), probe.agent)

    async def _play(self, task: Any, probe: Probe) -> ProbeResult:
        result = await self.lab.play(task, self.policy_of(task, probe))
        return self.result_of(task, probe, result)

    def result_of(self, task: Any, probe: Probe, result: Any) -> ProbeResult:
        """What the task's scoring made of `probe`'s episode `result` (an `EpisodeResult`),
        with the model requests it made."""
        from vfcheck._model import HARNESS_BUILTIN_TOOLS, takes_arguments
        from vfcheck._model.judges import label_source

        labels = self.judge_labels(task)
        mine = self.lab.runner.model.requests_of(t.id for t in result.traces)
        agent = [r for r in mine if r.request.kind == "agent"]
        offered = dict(agent[0].request.tool_parameters) if agent else {}
        env_tools = [n for n in offered if n not in HARNESS_BUILTIN_TOOLS]
        judges: dict[str, str] = {}
        for call in (r for r in mine if r.request.kind == "judge"):
            if call.reply.labels is not None:
                source = "the plugged judge's choices" if labels else label_source(
                    call.request, call.reply)
                judges.setdefault(call.request.model or "judge",
                                  f"{'/'.join(call.reply.labels)} ({source})")
            elif call.reply.unreadable is not None:
                judges.setdefault(call.request.model or "judge",
                                  f"no format its parser reads ({call.reply.unreadable})")
        scored = [t for t in result.traces if scored_trace(t)]
        rewards: dict[str, float | None] = {}
        weights: dict[str, float] = {}
        for trace in scored:
            for name, value in trace.rewards.items():
                rewards.setdefault(name, float(value.score))
                weights.setdefault(name, float(value.weight))
        reward = (sum(t.reward for t in scored) / len(scored)) if scored else None
        if not scored:  # what scoring left: each reward None (seeded, never set)
            for trace in result.traces:
                rewards.update({k: None for k in trace.rewards})
        return ProbeResult(
            probe=probe.name, reply=said(agent[0].reply) if agent else probe.reply,
            judge=probe.judge, reward=reward,
            rewards=rewards, errors=result.errors(located_error),
            seats=tuple(t.reward for t in scored),
            judge_calls=sum(1 for r in mine if r.request.kind == "judge"),
            turns=len(agent), env_tools=env_tools,
            argless_tools=[n for n in env_tools if not takes_arguments(offered[n])],
            tool_parameters={n: offered[n] for n in env_tools},
            runner_error=result.runner_error, unfinished=result.unfinished, weights=weights,
            judges=judges, judge_exchanges=judge_exchanges(result.traces),
            format=probe.format)

    async def alone_results(self, task: Any, results: Mapping[str, ProbeResult]
                            ) -> dict[str, ProbeResult]:
        """`results` (any keys) with each probe played again one at a time, with nothing
        else of the env in flight (`EpisodeLab.alone_plays`): what a probe earns when no
        other episode can share its state."""
        probes = {key: self._probes[(task.data.idx, r.probe)] for key, r in results.items()}
        plays = await self.lab.alone_plays(task, {p.name: self.policy_of(task, p)
                                                  for p in probes.values()})
        alone = {key: self.result_of(task, p, plays[p.name]) for key, p in probes.items()}
        for result in alone.values():
            if result.unfinished:
                deadline_hit(result.runner_error or "the episode's deadline")
        return alone

    def judge_labels(self, task: Any) -> tuple[str, str] | None:
        """The (positive, negative) labels a plugged judge declares, if one does."""
        for config in getattr(task.config, "judges", None) or []:
            choices = getattr(config, "choices", None)
            if isinstance(choices, (list, tuple)) and len(choices) == 2:
                return str(choices[0]), str(choices[1])
        return None

    async def verdict_results(self, task: Any, *kinds: Verdict) -> dict[str, ProbeResult]:
        """The task's base reply (the oracle, else a claim of success) scored under each
        judge verdict in `kinds`, played at once; only the first where it made no judge
        call (the other verdicts would change nothing)."""
        first = await self.play(task, await self.base_probe(task, kinds[0]))
        if not first.judge_calls:
            return {kinds[0]: first}
        probes = [await self.base_probe(task, kind) for kind in kinds[1:]]
        played = await asyncio.gather(*(self.play(task, probe) for probe in probes))
        return dict(zip(kinds, [first, *played], strict=True))

    async def base_probe(self, task: Any, kind: Verdict) -> Probe:
        """The task's base reply (the oracle in its best format, else a claim of success)
        with judges answering `kind`."""
        choice = await self.oracle_choice(task)
        if choice is not None:
            name = "oracle" if kind == "positive" else f"oracle/{kind}"
            return self.format_probe(name, kind, choice.best, choice.reference.answer)
        claim = self.probe("claim", task)
        assert claim is not None
        name = claim.name if kind == claim.judge else f"{claim.name}/{kind}"
        return dataclasses.replace(claim, judge=kind, name=name)

    async def trivial_results(self, task: Any) -> dict[str, ProbeResult]:
        """Every trivial probe of `task` that applies, by probe name (played at once)."""
        empty = self.probe("empty", task)
        assert empty is not None
        first = await self.oracle_result(task) or await self.play(task, empty)
        # a wrong answer is held to the oracle only: without a fair one it is not played
        names = [n for n in TRIVIAL_PROBES
                 if n != "wrong-answer" or self.oracle_counts(task, first)]
        probes = [self.probe(name, task, first) for name in names]
        played = await asyncio.gather(*(self.play(task, p) for p in probes if p is not None))
        return {r.probe: r for r in played}

    def probe(self, name: str, task: Any, first: ProbeResult | None = None) -> Probe | None:
        """The trivial probe `name` for `task` (`vfcheck.checks._trivial_probes`), its answers
        in the oracle's format (`oracle_choice` first)."""
        reference = self.reference(task)
        index = task.data.idx
        if index not in self._others:  # a pass over every task: once per sampled task
            self._others[index] = (other_answers(self.ctx, task), wrong_answer(self.ctx, task))
        others, wrong = self._others[index]
        return trivial_probe(name, task, fmt=self.oracle_format(task),
                             own=reference.answer if reference is not None else None,
                             others=others, wrong=wrong, first=first)


async def probe_lab(ctx: CheckContext) -> ProbeLab:
    """The env run's probe lab (one per run, over its episode lab)."""
    async def open_probes(ctx: CheckContext, _: Any) -> ProbeLab:
        return ProbeLab(ctx, await episode_lab(ctx))

    return await ctx.shared("probe_lab", open_probes)


def _rank(result: ProbeResult) -> float:
    """A play's rank for the oracle's format: its reward, an unscored play last (the
    earliest of equals wins: `max` keeps the first)."""
    return result.reward if result.reward is not None else -math.inf


def _done(result: ProbeResult) -> asyncio.Future[ProbeResult]:
    future: asyncio.Future[ProbeResult] = asyncio.get_running_loop().create_future()
    future.set_result(result)
    return future


def reply_blind(task: Any) -> list[str]:
    """The task's rewards, when none of them reads the trace: each takes the runtime or the
    task only (verifiers' echo-agentic-v1 reads the file its bash tool wrote). No reply can
    move such a reward, so a reference answer played as the reply is no evidence of it;
    [] when any reward reads the trace."""
    import inspect

    hooks = getattr(task, "hooks", None)
    names: list[str] = []
    for fn in hooks("reward") if callable(hooks) else []:
        try:
            parameters = inspect.signature(fn).parameters.values()
        except (TypeError, ValueError):
            return []
        if any(p.name == "trace" or "Trace" in str(p.annotation) for p in parameters):
            return []
        names.append(getattr(fn, "__name__", "reward"))
    return names
