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

__all__ = ["VerdictFormat", "example_formats", "prompt_formats"]


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
    """The prompt's last JSON example, its fields set to say each verdict (`_json_pair`)."""
    if "json" not in prompt.casefold():
        return None
    objects = _json_objects(prompt)
    if not objects:
        return None
    start, example = objects[-1]
    pair = _json_pair(example, prompt)
    if pair is None:
        return None
    return VerdictFormat(*pair, _json_kind(example), _line_of(prompt, start))


def _json_kind(example: dict[str, Any]) -> str:
    fields = ", ".join(f"{name}: {type(value).__name__}" for name, value in example.items())
    return f"a JSON object ({fields})"


def _json_pair(example: dict[str, Any], prompt: str) -> tuple[str, str] | None:
    """`example`'s fields set to say each verdict: booleans true/false, numbers the
    top/bottom of a range stated on a prompt line naming the field (else the example's
    value, at least 1, and 0); strings as written. None when no field can say it."""
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
    return json.dumps(positive), json.dumps(negative)


def example_formats(example: str, prompt: str) -> list[VerdictFormat]:
    """The verdict formats a reply written in the judge's format (a script's
    `judge_reply`) shows: a JSON object, a number in tags, a bare number, or a letter
    grade, said positive and negative with the ranges the prompt states (else from the
    example's value and 0); the text around a JSON object or tags is kept. Empty when the
    reply shows none of these (a label: the prompt's labels are tried after it)."""
    where = f"the script's judge_reply {_clip(example)!r}"
    found: list[VerdictFormat] = []
    for match in re.finditer(r"\{[^{}]*\}", example):
        try:
            value = json.loads(match.group(0))
        except ValueError:
            continue
        if isinstance(value, dict) and value and (pair := _json_pair(value, prompt)):
            head, tail = example[:match.start()], example[match.end():]
            found.append(VerdictFormat(f"{head}{pair[0]}{tail}", f"{head}{pair[1]}{tail}",
                                       _json_kind(value), where))
            break
    tagged = re.search(rf"<(?P<tag>[A-Za-z][\w-]{{0,30}})>\s*(?P<n>{_NUMBER})\s*</(?P=tag)>",
                       example)
    if tagged is not None and not found:
        tag, value = tagged.group("tag"), _number(tagged.group("n"))
        low, high = _stated_range(prompt) or (0, max(value, 1))
        head, tail = example[:tagged.start()], example[tagged.end():]
        found.append(VerdictFormat(f"{head}<{tag}>{high}</{tag}>{tail}",
                                   f"{head}<{tag}>{low}</{tag}>{tail}",
                                   f"a score in <{tag}> tags, {low} to {high}", where))
    bare = example.strip()
    if re.fullmatch(_NUMBER, bare):
        value = _number(bare)
        low, high = _stated_range(prompt) or (0, max(value, 1))
        found.append(VerdictFormat(str(high), str(low), f"a number from {low} to {high}",
                                   where))
    elif re.fullmatch(r"[A-F][+-]?", bare):
        letter = _letter_format(prompt)
        worst = letter.negative if letter is not None else "F"
        found.append(VerdictFormat("A", worst, f"a letter grade, A to {worst}", where))
    return found


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


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
