"""What a reward probe is and what it found: the plain data the probe families read.

A `Probe` is one agent policy under one judge verdict; a `ProbeResult` is what the task's
scoring made of its episode (`vfcheck.checks._probes` plays them). An episode whose scoring
raised or never ran is unscored: its reward is None, shown `-`, never read as a 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from vfcheck.checks._answer_formats import AnswerFormat
from vfcheck.checks._reference_answer import Reference

Verdict = Literal["positive", "negative", "garbage"]


@dataclass
class ProbeResult:
    """One probe episode, as the probe families read it."""

    probe: str
    reply: str
    """What the policy said (its first reply; tool calls described), for messages."""
    judge: Verdict
    reward: float | None
    """The episode's reward (mean over its traces); None if no trace was scored (scoring
    raised, or the episode never reached it): never a 0."""
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
    weights: dict[str, float] = field(default_factory=dict)
    """Each reward function's weight, as scoring recorded it."""
    judges: dict[str, str] = field(default_factory=dict)
    """Each judge called (by model name): the labels it was answered in and where they came
    from (`yes/no (its prompt)`), or `no format its parser reads (why)`."""
    format: str = ""
    """The answer format the reply was written in (`in <answer> tags`), where it carries one."""
    unfinished: bool = False
    """The runner's deadline ended the episode (`EpisodeResult.unfinished`)."""
    argless_tools: list[str] = field(default_factory=list)
    """Those of `env_tools` that take no arguments (calling one is the work, not a guess)."""
    judge_exchanges: list[dict[str, Any]] = field(default_factory=list)
    """What each judge call was asked and answered (`vfcheck.checks._judge_calls`)."""
    tool_parameters: dict[str, Any] = field(default_factory=dict)
    """Each of `env_tools`' JSON-schema parameters, as the first request offered them."""

    def describe(self) -> str:
        """`reward 1 (echoed=1)`, or what kept it from being scored."""
        if self.reward is None:
            cause = self.errors[0] if self.errors else self.runner_error or "no trace scored"
            return f"no reward ({short(cause, 200)})"
        parts = ", ".join(f"{k}={num(v)}" for k, v in self.rewards.items())
        errors = f"; it recorded {short(self.errors[0], 160)}" if self.errors else ""
        return f"reward {num(self.reward)}" + (f" ({parts})" if parts else "") + errors

    def as_dict(self) -> dict[str, Any]:
        return {"probe": self.probe, "reply": short(self.reply, 200), "judge": self.judge,
                "reward": self.reward, "rewards": self.rewards, "errors": self.errors[:3],
                "judge_calls": self.judge_calls, "turns": self.turns,
                **({"format": self.format} if self.format else {}),
                **({"judges": self.judges} if self.judges else {}),
                **({"judge_exchanges": self.judge_exchanges} if self.judge_exchanges else {})}


@dataclass(frozen=True)
class Probe:
    name: str
    judge: Verdict
    agent: Callable[[Any], Any]
    """The agent policy (`vfcheck._model` Policy)."""
    reply: str
    format: str = ""


@dataclass
class OracleChoice:
    """The reference answer's plays in each format tried, and the best of them."""

    reference: Reference
    tried: list[tuple[AnswerFormat, ProbeResult]]
    best: AnswerFormat

    @property
    def result(self) -> ProbeResult:
        return next(r for f, r in self.tried if f == self.best)

    def listing(self) -> str:
        """`<answer> tags 0, bare 0` : each format tried and its reward."""
        return ", ".join(f"{f.describe()}: {num(r.reward) if r.reward is not None else '-'}"
                         for f, r in self.tried)


def scored_trace(trace: Any) -> bool:
    """Whether scoring finished on `trace`: it recorded rewards and none is left unset (a
    reward that raised leaves every reward as verifiers seeded it, None)."""
    return bool(trace.rewards) and all(v is not None for v in trace.rewards.values())


def table_of(results: Mapping[str, ProbeResult | None]) -> dict[str, float | None]:
    """probe -> reward: the row of the policy x task table that reports show."""
    return {name: (r.reward if r is not None else None) for name, r in results.items()}


def errors_of(results: Mapping[str, ProbeResult | None]) -> dict[str, str]:
    """probe -> why it was not scored, for the table's `-` cells."""
    return {name: short(r.errors[0] if r.errors else r.runner_error or "no trace scored", 200)
            for name, r in results.items() if r is not None and r.reward is None}


def reply_of(probe_name: str) -> str:
    """The agent policy a probe name plays: `claim` for `claim/positive` (the part after
    the slash names the judge verdict)."""
    return probe_name.split("/", 1)[0]


def said(reply: Any) -> str:
    """What a `vfcheck._model.Reply` said: its text, else its tool calls."""
    if reply.content:
        return str(reply.content)
    calls = ", ".join(f"{c.name}({c.arguments})" for c in reply.tool_calls)
    return f"<tool calls: {calls}>" if calls else ""


def fixed_reply(reply: str) -> Callable[[Any], Any]:
    from vfcheck._model import Reply, fixed

    return fixed(Reply.text(reply))


def num(value: float | None) -> str:
    if value is None:
        return "None"
    return f"{value:g}" if math.isfinite(value) else str(value)


def short(text: str, limit: int = 80) -> str:
    """`text` cut to `limit` characters (messages quote it with repr, which escapes)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
