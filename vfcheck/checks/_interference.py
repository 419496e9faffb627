"""What the `concurrency` family compares: episodes played at once, as a trainer plays a group
of rollouts, with the same scripted episodes played one at a time.

An episode is compared through its normalised traces (`vfcheck._traces.normalize`, what
`determinism.replay` compares): its rewards and metrics by name, its stop condition and
errors, then everything else the view keeps. The group's episodes get different replies
(the reference answer, then an empty reply, in turn): a reward that reads another
episode's reply scores the same as its own when every reply is the same, so only different
replies show the interference. Nothing here imports verifiers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from vfcheck._traces.normalize import trace_changes

SHOWN = 3
"""Differences a message spells out (the details keep every one)."""


@dataclass(frozen=True)
class Played:
    """One episode as compared: the policy it played (`oracle`, `empty`, `default`) and its
    normalised traces."""

    seat: str
    views: list[dict[str, Any]] = field(default_factory=list)

    @property
    def reply(self) -> str | None:
        """The first reply the model gave in the episode, if any."""
        for view in self.views:
            for message in view.get("messages") or []:
                if message.get("role") == "assistant":
                    return str(message.get("content") or "")
        return None

    def value(self, label: str) -> str | None:
        """The value of `label` (`reward echoed`, `metric chars`) as a diff shows it."""
        kind, _, name = label.partition(" ")
        for view in self.views[:1]:
            if kind == "reward":
                reward = (view.get("rewards") or {}).get(name)
                return _shown(reward.get("score") if isinstance(reward, dict) else reward)
            if kind == "metric":
                return _shown((view.get("metrics") or {}).get(name))
        return None


@dataclass(frozen=True)
class Change:
    """One field that differs: its label, and its value at once and one at a time."""

    label: str
    at_once: str
    alone: str


def label_of(path: str) -> str:
    """`rewards.echoed.score` -> `reward echoed`, `metrics.chars` -> `metric chars`,
    `stop_condition` -> `stop condition`; any other path as it is."""
    head, _, rest = path.partition(".")
    if head == "rewards" and rest.endswith(".score"):
        return f"reward {rest[: -len('.score')]}"
    if head == "metrics" and rest:
        return f"metric {rest}"
    if path == "stop_condition":
        return "stop condition"
    return path


def _rank(change: Change) -> int:
    """Scores first, then how the episode ended, then the rest of the trace."""
    for rank, start in enumerate(("reward ", "metric ", "stop condition", "errors", "ok",
                                  "is_")):
        if change.label.startswith(start):
            return rank
    return 9


def changes(at_once: Played, alone: Played) -> list[Change]:
    """Every difference between an episode played at once and one at a time, scores first."""
    if len(at_once.views) != len(alone.views):
        return [Change("traces minted", str(len(at_once.views)), str(len(alone.views)))]
    found: list[Change] = []
    several = len(alone.views) > 1
    for index, (first, second) in enumerate(zip(alone.views, at_once.views, strict=True)):
        for path, was, now in trace_changes(first, second):
            label = label_of(path)
            found.append(Change(f"traces[{index}] {label}" if several else label, now, was))
    return sorted(found, key=_rank)


def compare(group: list[Played], alone: dict[str, Played]) -> list[tuple[int, Change]]:
    """Each difference of each episode of `group` from its policy's play one at a time:
    `(episode number in the group, change)`."""
    return [(number, change) for number, played in enumerate(group)
            for change in changes(played, alone[played.seat])]


def whose(change: Change, seat: str, alone: dict[str, Played]) -> str | None:
    """Which other policy's reply earns, one at a time, what this episode got at once: the
    reply it was likely scored on."""
    for other, played in alone.items():
        if other != seat and played.value(change.label) == change.at_once:
            return other
    return None


def described(group: list[Played], alone: dict[str, Played],
              found: list[tuple[int, Change]]) -> str:
    """The failure's observation: how many episodes at once, their replies, and the first
    differences, each naming the episode, its reply, the field and both values."""
    replies = ", ".join(_quoted(p.reply) for p in group)
    lines = []
    for number, change in found[:SHOWN]:
        played = group[number]
        line = (f"episode {number} of the group (policy {played.seat}, reply "
                f"{_quoted(played.reply)}) got {change.label} {change.at_once} at once, "
                f"{change.alone} one at a time")
        other = whose(change, played.seat, alone) if change.at_once != change.alone else None
        if other is not None:
            line += (f" ({change.at_once} is what reply {_quoted(alone[other].reply)} earns "
                     "one at a time: scored on another episode's reply?)")
        lines.append(line)
    more = f" (+{len(found) - SHOWN} more differences)" if len(found) > SHOWN else ""
    return (f"episodes at once score differently from one at a time: state shared between "
            f"episodes? Of {len(group)} episodes of the task played at once (replies "
            f"{replies}), {'; '.join(lines)}{more}")


def as_rows(found: list[tuple[int, Change]]) -> list[dict[str, Any]]:
    """The differences as the JSON report keeps them."""
    return [{"episode": number, "field": c.label, "at_once": c.at_once, "alone": c.alone}
            for number, c in found]


def _shown(value: Any) -> str:
    """A value as `trace_changes` shows it (so a looked-up value compares with a diff's)."""
    return json.dumps(value, ensure_ascii=False, default=str)


def _quoted(reply: str | None) -> str:
    if reply is None:
        return "none"
    return repr(reply if len(reply) <= 60 else reply[:59] + "…")
