"""Reward probes: play each sampled task under a set of policies and read the reward.

An RL env exists to hand out rewards, and the bugs that matter are invisible to every other
check: a reward that is always 0, a prompt that gives the answer away, a judge parser that
scores an unreadable verdict as 0. A *probe* is one episode of a task under one agent policy
and one judge verdict (`vfcheck.model` answers the env's own judge calls, attributed to the
episode); its *result* is what the task's scoring made of it. Three families read the same
memoised results: `reward.*` (is the reward reachable and does it move), `exploit.*` (does a
trivial policy earn what the reference answer earns), `judge.*` (is the judge wired the right
way round, and does an unreadable verdict error the rollout).

The reference answer (the *oracle*) comes from, in order: the script's `oracle` for the
task; the `answer_field` of a plugged reference judge; a data field named like a reference
(`ORACLE_FIELDS`). A field oracle is one fixed reply, so it counts only where the task plays
as one chat turn with no env tools; elsewhere the script must give it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from vfcheck.checks.lab import episode_lab
from vfcheck.isolation.attempts import deadline_hit

if TYPE_CHECKING:
    from vfcheck.checks.context import CheckContext

Verdict = Literal["positive", "negative", "garbage"]

ORACLE_FIELDS = ("answer", "solution", "target", "reference", "expected_answer",
                 "ground_truth", "gold")
"""Data fields read as the task's reference answer, in this order."""
REFUSAL = "I'm sorry, but I can't help with that."
CLAIM = "Done. I have completed the task and my answer is correct."
JUDGE_ATTACKS = (":", ".", "Thought process:")
"""One-token replies that LLM judges are known to score as correct."""
TOOL_SPAM_ROUNDS = 3
"""How many times `tool-spam` calls each env tool before it stops."""
SPAM_LIMIT = 20_000
"""Characters of concatenated reference answers `answer-spam` sends at most."""


@dataclass(frozen=True)
class Oracle:
    reply: str
    source: str
    """Where the reply came from: `script`, `judges[reference].answer_field=...`,
    `data.answer`."""


@dataclass
class ProbeResult:
    """One probe episode, as the probe families read it."""

    probe: str
    reply: str
    """What the policy said (its first reply; tool calls described), for messages."""
    judge: Verdict
    reward: float | None
    """The episode's reward (mean over its traces); None if no trace was scored."""
    rewards: dict[str, float | None] = field(default_factory=dict)
    """Each reward function's score, by name."""
    errors: list[str] = field(default_factory=list)
    """Every error the episode recorded (a judge that raised, a harness that failed)."""
    seats: tuple[float, ...] = ()
    """Each scored trace's reward: the seats of a multi-agent episode (a zero-sum game's
    mean is always 0, its seats are not)."""
    judge_calls: int = 0
    turns: int = 0
    """Agent (model) requests the episode made."""
    env_tools: list[str] = field(default_factory=list)
    """Tools of the env's own that the first request offered."""
    runner_error: str | None = None
    unfinished: bool = False
    """The runner's deadline ended the episode (`EpisodeResult.unfinished`)."""

    def describe(self) -> str:
        """`reward 1 (echoed=1)`, or what kept it from being scored."""
        if self.reward is None:
            cause = self.errors[0] if self.errors else self.runner_error or "no trace scored"
            return f"no reward ({cause})"
        parts = ", ".join(f"{k}={num(v)}" for k, v in self.rewards.items())
        errors = f"; it recorded {short(self.errors[0], 160)}" if self.errors else ""
        return f"reward {num(self.reward)}" + (f" ({parts})" if parts else "") + errors

    def as_dict(self) -> dict[str, Any]:
        return {"probe": self.probe, "reply": short(self.reply, 200), "judge": self.judge,
                "reward": self.reward, "rewards": self.rewards, "errors": self.errors[:3],
                "judge_calls": self.judge_calls, "turns": self.turns}


@dataclass(frozen=True)
class Probe:
    name: str
    judge: Verdict
    agent: Callable[[Any], Any]
    """The agent policy (`vfcheck.model` Policy)."""
    reply: str


class ProbeLab:
    """Memoised probe episodes of one env run, played through the episode lab."""

    def __init__(self, ctx: CheckContext, lab: Any) -> None:
        self.ctx = ctx
        self.lab = lab
        self._plays: dict[tuple[int, str], asyncio.Future[ProbeResult]] = {}
        self.reward_max = float(ctx.options.reward_max)

    # -- the reference answer

    def source(self, task: Any) -> str:
        oracle = self.oracle(task)
        return oracle.source if oracle is not None else "none"

    def oracle(self, task: Any) -> Oracle | None:
        script = self.ctx.script_oracle(task)
        if script is not None:
            return Oracle(script, "script")
        for config in getattr(task.config, "judges", None) or []:
            answer_field = getattr(config, "answer_field", None)
            if getattr(config, "id", None) == "reference" and answer_field:
                value = getattr(task.data, answer_field, None)
                if (text := _answer_text(value)) is not None:
                    return Oracle(text, f"judges[reference].answer_field={answer_field!r}")
        for name in ORACLE_FIELDS:
            if (text := _answer_text(getattr(task.data, name, None))) is not None:
                return Oracle(text, f"data.{name}")
        return None

    def all_answers(self, task: Any) -> str:
        """Every task's reference answer, one per line, `task`'s own last (`answer-spam`): a
        parser that takes the first match must not be credited with the probe's luck."""
        own = self.oracle(task)
        answers = [o.reply for t in self.ctx.tasks if (o := self.oracle(t)) is not None]
        others = [a for a in dict.fromkeys(answers) if own is None or a != own.reply]
        return "\n".join([*others, *([own.reply] if own else [])])[-SPAM_LIMIT:]

    def judge_labels(self, task: Any) -> tuple[str, str] | None:
        """The (positive, negative) labels a plugged judge declares, if one does."""
        for config in getattr(task.config, "judges", None) or []:
            choices = getattr(config, "choices", None)
            if isinstance(choices, (list, tuple)) and len(choices) == 2:
                return str(choices[0]), str(choices[1])
        return None

    # -- playing

    async def play(self, task: Any, probe: Probe) -> ProbeResult:
        key = (task.data.idx, probe.name)
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

    async def _play(self, task: Any, probe: Probe) -> ProbeResult:
        from vfcheck.model import first_of, judge_policy

        model = self.lab.runner.model
        policy = first_of(judge_policy(probe.judge, labels=self.judge_labels(task)),
                          probe.agent)
        before = len(model.requests)
        result = await self.lab.play(task, policy)
        trace_ids = {t.id for t in result.traces}
        mine = [r for r in model.requests[before:]
                if (r.request.session_id in trace_ids)
                or (r.request.episode is not None and trace_ids & set(r.request.episode.trace_ids))]
        agent = [r for r in mine if r.request.kind == "agent"]
        offered = list(agent[0].request.tool_parameters) if agent else []
        from vfcheck.model import HARNESS_BUILTIN_TOOLS

        scored = [t for t in result.traces if t.rewards]
        rewards: dict[str, float | None] = {}
        for trace in scored:
            for name, value in trace.rewards.items():
                rewards.setdefault(name, None if value is None else float(value.score))
        reward = (sum(t.reward for t in scored) / len(scored)) if scored else None
        return ProbeResult(
            probe=probe.name, reply=said(agent[0].reply) if agent else probe.reply,
            judge=probe.judge, reward=reward,
            rewards=rewards, errors=result.errors(), seats=tuple(t.reward for t in scored),
            judge_calls=sum(1 for r in mine if r.request.kind == "judge"),
            turns=len(agent), env_tools=[n for n in offered if n not in HARNESS_BUILTIN_TOOLS],
            runner_error=result.runner_error, unfinished=result.unfinished)

    async def oracle_result(self, task: Any, judge: Verdict = "positive") -> ProbeResult | None:
        oracle = self.oracle(task)
        if oracle is None:
            return None
        name = "oracle" if judge == "positive" else f"oracle/{judge}"
        return await self.play(task, Probe(name, judge, fixed_reply(oracle.reply), oracle.reply))

    def oracle_counts(self, task: Any, result: ProbeResult | None) -> bool:
        """Whether the oracle's episode is a fair reference: a scripted oracle always; a
        field's one fixed reply only for one chat turn with no env tools."""
        oracle = self.oracle(task)
        if oracle is None or result is None:
            return False
        return oracle.source == "script" or (result.turns <= 1 and not result.env_tools)

    def oracle_gap(self, task: Any, result: ProbeResult | None) -> str:
        """Why the task has no usable oracle, for skip reasons and messages."""
        oracle = self.oracle(task)
        if oracle is None:
            return ("the task has no data field "
                    f"{'/'.join(ORACLE_FIELDS)}, no plugged reference judge, and the script "
                    "gives no `oracle` for it")
        assert result is not None
        shape = (f"offers env tools ({', '.join(result.env_tools)})" if result.env_tools
                 else f"plays {result.turns} model turns")
        return (f"the task {shape}, so one fixed reply ({oracle.source}) is no reference "
                "answer: give the task an `oracle` in the script (--script)")

    async def trivial_results(self, task: Any) -> dict[str, ProbeResult]:
        """Every trivial probe of `task` that applies, by probe name (played at once)."""
        empty = self.probe("empty", task)
        assert empty is not None
        first = await self.oracle_result(task) or await self.play(task, empty)
        probes = [self.probe(name, task, first) for name in TRIVIAL_PROBES]
        played = await asyncio.gather(*(self.play(task, p) for p in probes if p is not None))
        return {r.probe: r for r in played}

    def probe(self, name: str, task: Any, first: ProbeResult | None = None) -> Probe | None:
        """The trivial probe `name` for `task`, or None where it does not apply (no system
        prompt, no reference answers, no env tools)."""
        from vfcheck.model import Reply, from_function

        def text(reply: str) -> Probe:
            return Probe(name, "negative", fixed_reply(reply), reply)

        if name == "empty":
            return text("")
        if name == "echo-prompt":
            def echo(request: Any) -> Any:
                return Reply.text(request.last_user_text or "")
            return Probe(name, "negative", from_function(echo), _prompt_text(task))
        if name == "echo-system":
            system = _system_text(task)
            return None if not system else text(system)
        if name == "refusal":
            return text(REFUSAL)
        if name == "claim":
            return text(CLAIM)
        if name.startswith("judge-attack"):
            return text(JUDGE_ATTACKS[int(name.rsplit("-", 1)[1]) - 1])
        if name == "answer-spam":
            spam = self.all_answers(task)
            return None if not spam else text(spam)
        if name == "tool-spam":
            tools = first.env_tools if first is not None else []
            return None if not tools else Probe(name, "negative", _tool_spam(tools),
                                                f"calls {', '.join(tools)} "
                                                f"{TOOL_SPAM_ROUNDS}x each, then ''")
        raise KeyError(name)


TRIVIAL_PROBES: tuple[str, ...] = (
    "empty", "echo-prompt", "echo-system", "refusal", "claim", "judge-attack-1",
    "judge-attack-2", "judge-attack-3", "answer-spam", "tool-spam",
)


async def probe_lab(ctx: CheckContext) -> ProbeLab:
    """The env run's probe lab (one per run, over its episode lab)."""
    async def open_probes(ctx: CheckContext, _: Any) -> ProbeLab:
        return ProbeLab(ctx, await episode_lab(ctx))

    return await ctx.shared("probe_lab", open_probes)


def table_of(results: Mapping[str, ProbeResult | None]) -> dict[str, float | None]:
    """probe -> reward: the row of the policy x task table that reports show."""
    return {name: (r.reward if r is not None else None) for name, r in results.items()}


def reply_of(probe_name: str) -> str:
    """The agent policy a probe name plays: `claim` for `claim/positive` (the part after
    the slash names the judge verdict)."""
    return probe_name.split("/", 1)[0]


def said(reply: Any) -> str:
    """What a `vfcheck.model.Reply` said: its text, else its tool calls."""
    if reply.content:
        return str(reply.content)
    calls = ", ".join(f"{c.name}({c.arguments})" for c in reply.tool_calls)
    return f"<tool calls: {calls}>" if calls else ""


def fixed_reply(reply: str) -> Callable[[Any], Any]:
    from vfcheck.model import Reply, fixed

    return fixed(Reply.text(reply))


def _tool_spam(tools: list[str]) -> Callable[[Any], Any]:
    from vfcheck.model import Reply, from_function, generate_arguments

    def policy(request: Any) -> Any:
        calls = len(request.called_tool_names)
        offered = request.tool_parameters
        if calls >= TOOL_SPAM_ROUNDS * len(tools):
            return Reply.text("")
        name = tools[calls % len(tools)]
        return Reply.tool(name, generate_arguments(offered.get(name, {}), seed=calls,
                                                   tool_name=name))

    return from_function(policy)


def _answer_text(value: Any) -> str | None:
    if isinstance(value, (list, tuple)):
        value = value[0] if value else None
    if value is None or isinstance(value, (dict, bytes)):
        return None
    text = str(value).strip()
    return text or None


def _prompt_text(task: Any) -> str:
    try:
        return str(task.data.prompt_text)
    except Exception:  # noqa: BLE001 - only for the message: the policy echoes the request
        return "<the prompt>"


def _system_text(task: Any) -> str:
    system = getattr(task.data, "system_prompt", None)
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return " ".join(str(getattr(m, "content", m)) for m in system)
    return ""


def num(value: float | None) -> str:
    if value is None:
        return "None"
    return f"{value:g}" if math.isfinite(value) else str(value)


def short(text: str, limit: int = 80) -> str:
    """`text` cut to `limit` characters (messages quote it with repr, which escapes)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
