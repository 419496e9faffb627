"""Verdict formats read from a judge's prompt, beyond labels: a JSON object, a number in
tags or on a stated scale, a letter grade.

Judges in the field ask for these at least as often as for a pair of labels (issue #35:
`Reply with one JSON object and nothing else, in the form {"faithful": true, "covered":
2}`; `put the score in <score></score> tags`; `on a scale of 1 to 10`; `a letter grade`).
Each format is a pair of replies, (positive, negative), with what it is and where it was
read, so a report can say how each judge was answered. Which pair is used is decided by
`vfcheck._model.judges` (and the judge's own parser, where vfcheck can call it).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["VerdictFormat", "prompt_formats"]


@dataclass(frozen=True)
class VerdictFormat:
    """Replies that say a positive and a negative verdict in one format."""

    positive: str
    negative: str
    kind: str
    """What the format is, for reports: `a JSON object`, `a score in <score> tags`, ..."""
    where: str
    """Where it was read: the prompt's line that states it."""


_NUMBER = r"-?\d+(?:\.\d+)?"
_RANGE = re.compile(
    rf"(?:from|between|of|scale|range|in|score|rate|rating)\s*:?\s*(?:of\s+)?\(?"
    rf"(?P<lo>{_NUMBER})\s*(?:-|\u2013|to|and|through)\s*(?P<hi>{_NUMBER})(?!\d)",
    re.IGNORECASE,
)
_SLASH_RANGE = re.compile(
    rf"(?<![\w.])(?P<lo>{_NUMBER})\s*(?:-|\u2013)\s*(?P<hi>{_NUMBER})(?!\w|\.\d)"
)
_SCALE_WORDS = re.compile(r"scale|score|rate|rating|grade|points?\b", re.IGNORECASE)
_TAGS = re.compile(
    r"<(?P<tag>[A-Za-z][\w-]{0,30})>\s*(?:\.\.\.|\u2026|[A-Z_ ]{0,20}|\d+)?\s*</(?P=tag)>"
)
_LETTER_LIST = re.compile(r"\bA\s*,\s*B(?:\s*,\s*[C-F])*\s*,?\s*(?:or\s+)?(?P<worst>[C-F])\b")
_LETTER_RANGE = re.compile(
    r"grade[^\n]{0,20}?\bA\s*(?:-|\u2013|to|through)\s*(?P<worst>[C-F])\b", re.IGNORECASE
)
_LETTER_WORDS = re.compile(r"letter\s+grade", re.IGNORECASE)


def prompt_formats(prompt: str) -> list[VerdictFormat]:
    """Every format the prompt states, most specific first: a JSON example, tags, a
    scale, a letter grade. Empty when it states none of these."""
    found = [fmt for fmt in (_json_format(prompt), _tag_format(prompt)) if fmt is not None]
    found += [fmt for fmt in (_scale_format(prompt), _letter_format(prompt))
              if fmt is not None]
    return found


def _line_of(prompt: str, index: int) -> str:
    start = prompt.rfind("\n", 0, index) + 1
    end = prompt.find("\n", index)
    line = prompt[start:end if end >= 0 else len(prompt)].strip()
    return line if len(line) <= 120 else line[:117] + "..."


def _number(text: str) -> float | int:
    value = float(text)
    return int(value) if value.is_integer() and "." not in text else value


def _stated_range(prompt: str, near: str | None = None) -> tuple[float | int, float | int] | None:
    """(low, high) of a range the prompt states; with `near`, on a line naming it."""
    lines = prompt.splitlines()
    if near is not None:
        word = re.compile(rf"(?<![\w\"']){re.escape(near)}(?![\w\"'])", re.IGNORECASE)
        lines = [bare for line in lines
                 if word.search(bare := re.sub(r"\{[^{}]*\}", " ", line))]
    for line in lines:
        match = _RANGE.search(line) or (_SLASH_RANGE.search(line)
                                        if near is not None or _SCALE_WORDS.search(line)
                                        else None)
        if match is not None:
            low, high = _number(match.group("lo")), _number(match.group("hi"))
            if low < high:
                return low, high
    return None


def _json_objects(prompt: str) -> list[tuple[int, dict[str, Any]]]:
    """Flat JSON objects written in the prompt (its examples), with where each starts."""
    found = []
    for match in re.finditer(r"\{[^{}]*\}", prompt):
        try:
            value = json.loads(match.group(0))
        except ValueError:
            continue
        if isinstance(value, dict) and value:
            found.append((match.start(), value))
    return found


def _json_format(prompt: str) -> VerdictFormat | None:
    """The prompt's last JSON example, its fields set to say each verdict: booleans
    true/false, numbers the top/bottom of a range stated on a line naming the field (else
    the example's value, at least 1, and 0); strings as written."""
    if "json" not in prompt.casefold():
        return None
    objects = _json_objects(prompt)
    if not objects:
        return None
    start, example = objects[-1]
    positive: dict[str, Any] = {}
    negative: dict[str, Any] = {}
    for name, value in example.items():
        if isinstance(value, bool):
            positive[name], negative[name] = True, False
        elif isinstance(value, int | float):
            bounds = _stated_range(prompt, near=name)
            if bounds is not None:
                low, high = bounds
            else:
                low, high = 0, max(value, 1)
            if isinstance(value, int):
                low, high = int(low), int(high)
            positive[name], negative[name] = high, low
        else:
            positive[name] = negative[name] = value
    if positive == negative:
        return None
    fields = ", ".join(f"{name}: {type(value).__name__}" for name, value in example.items())
    return VerdictFormat(json.dumps(positive), json.dumps(negative),
                         f"a JSON object ({fields})", _line_of(prompt, start))


def _tag_format(prompt: str) -> VerdictFormat | None:
    """A number in the tags the prompt names (`<score></score>`), on its stated scale
    (else 1 and 0)."""
    match = None
    for candidate in _TAGS.finditer(prompt):
        if _SCALE_WORDS.search(candidate.group("tag")) or candidate.group("tag").casefold() in (
                "score", "rating", "grade", "verdict", "answer", "result", "judgment"):
            match = candidate
    if match is None:
        return None
    tag = match.group("tag")
    bounds = _stated_range(prompt)
    low, high = bounds if bounds is not None else (0, 1)
    return VerdictFormat(f"<{tag}>{high}</{tag}>", f"<{tag}>{low}</{tag}>",
                         f"a score in <{tag}> tags, {low} to {high}",
                         _line_of(prompt, match.start()))


def _scale_format(prompt: str) -> VerdictFormat | None:
    """A bare number on the scale the prompt states (`on a scale of 1 to 10`)."""
    for index, line in enumerate(prompt.splitlines()):
        if _SCALE_WORDS.search(line) and (bounds := _stated_range(line)) is not None:
            low, high = bounds
            offset = sum(len(lines) + 1 for lines in prompt.splitlines()[:index])
            return VerdictFormat(str(high), str(low), f"a number from {low} to {high}",
                                 _line_of(prompt, offset))
    return None


def _letter_format(prompt: str) -> VerdictFormat | None:
    """A letter grade: A for positive, the worst letter the prompt names (else F)."""
    match = _LETTER_RANGE.search(prompt) or _LETTER_LIST.search(prompt)
    if match is not None:
        worst = match.group("worst")
    elif (match := _LETTER_WORDS.search(prompt)) is not None:
        worst = "F"
    else:
        return None
    return VerdictFormat("A", worst, f"a letter grade, A to {worst}",
                         _line_of(prompt, match.start()))
