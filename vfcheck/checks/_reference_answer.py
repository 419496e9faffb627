"""A task's reference answer, and the other tasks' answers the probes set against it.

The reference answer comes from, in order: the script's `oracle` for the task (played as
the script gives it); the `answer_field` of a plugged reference judge; a data field named
like a reference (`ORACLE_FIELDS`). Answer spam and the wrong-answer probe need the other
tasks' answers: the ones that say something else (`42` and `42.0` are one answer).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vfcheck.checks._answer_formats import overlapping, same_answer

if TYPE_CHECKING:
    from vfcheck.checks._context import CheckContext

ORACLE_FIELDS = ("answer", "solution", "target", "reference", "expected_answer",
                 "ground_truth", "gold")
"""Data fields read as the task's reference answer, in this order."""
SPAM_LIMIT = 20_000
"""Characters of concatenated reference answers `answer-spam` sends at most."""


@dataclass(frozen=True)
class Reference:
    answer: str
    """The answer as the field (or script) holds it."""
    source: str
    """Where it came from: `script`, `judges[reference].answer_field=...`, `data.answer`."""

    @property
    def scripted(self) -> bool:
        return self.source == "script"


def reference_of(ctx: CheckContext, task: Any) -> Reference | None:
    """`task`'s reference answer (module docstring), or None."""
    script = ctx.script_oracle(task)
    if script is not None:
        return Reference(script, "script")
    for config in getattr(task.config, "judges", None) or []:
        answer_field = getattr(config, "answer_field", None)
        if getattr(config, "id", None) == "reference" and answer_field:
            value = getattr(task.data, answer_field, None)
            if (text := answer_text(value)) is not None:
                return Reference(text, f"judges[reference].answer_field={answer_field!r}")
    for name in ORACLE_FIELDS:
        if (text := answer_text(getattr(task.data, name, None))) is not None:
            return Reference(text, f"data.{name}")
    return None


def other_answers(ctx: CheckContext, task: Any) -> list[str]:
    """The other tasks' reference answers that say something else than `task`'s, once each,
    in taskset order."""
    own = reference_of(ctx, task)
    found: list[str] = []
    for other in ctx.tasks:
        if other is task or (ref := reference_of(ctx, other)) is None:
            continue
        if own is not None and same_answer(ref.answer, own.answer):
            continue
        if not any(same_answer(ref.answer, seen) for seen in found):
            found.append(ref.answer)
    return found


def wrong_answer(ctx: CheckContext, task: Any) -> str | None:
    """Another task's answer to play as a wrong one: the first that neither contains nor is
    contained in `task`'s own (a lenient reward may rightly pay `14` for `4`), else the
    first; None where every task shares one answer."""
    others = other_answers(ctx, task)
    own = reference_of(ctx, task)
    clean = [a for a in others if own is None or not overlapping(a, own.answer)]
    picks = clean or others
    return picks[0] if picks else None


def spam_lines(own: str, others: list[str], own_first: bool) -> list[str]:
    """Every answer once, `own` first or last, cut to `SPAM_LIMIT` characters without
    losing `own`."""
    budget = SPAM_LIMIT - len(own)
    kept: list[str] = []
    for answer in others:
        budget -= len(answer) + 1
        if budget < 0:
            break
        kept.append(answer)
    return [own, *kept] if own_first else [*kept, own]


def answer_text(value: Any) -> str | None:
    if isinstance(value, (list, tuple)):
        value = value[0] if value else None
    if value is None or isinstance(value, (dict, bytes)):
        return None
    text = str(value).strip()
    return text or None
