"""The formats a task's reference answer is played in: the ones its prompt asks for first.

Most RL envs read the answer out of a format the prompt names ("put your answer in
<answer></answer> tags", "\\boxed{}", "#### 42", "Answer: ...", a JSON object), and score
a bare answer 0. Played bare, a healthy reward looks dead. So the reference answer is
played in each format the task's own prompt or system prompt names, then in a few formats
many parsers read (`UNIVERSAL`); the best-scoring play is the oracle, and every other
probe that carries an answer (answer spam, a wrong answer) is written in that same format.
Pure functions: no verifiers import.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

MAX_FORMATS = 8
"""Formats played at most per task (each is an episode)."""
ANSWER_WORDS = ("answer", "final", "result", "solution", "output", "response", "value")
"""Names of a tag or JSON key that holds the answer (where several are named)."""

_TAG = re.compile(r"<(?P<name>[A-Za-z][\w\-]{0,39})>")
_TAG_WORD = re.compile(r"\btags?\b", re.IGNORECASE)
_BOXED = re.compile(r"\\boxed\b|\bboxed\{", re.IGNORECASE)
_HASHES = re.compile(r"####")
_LINE = re.compile(r"(?P<label>\b(?:final\s+answer|answer|result)\s*):", re.IGNORECASE)
_JSON_OBJECT = re.compile(r"\{[^{}]*[\"'][A-Za-z_]\w*[\"']\s*:[^{}]*\}")
_JSON_KEY = re.compile(r"[\"'](?P<key>[A-Za-z_]\w*)[\"']\s*:")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


@dataclass(frozen=True)
class AnswerFormat:
    """One way of writing an answer: `kind` with its `names` (tags, a label, JSON keys)."""

    kind: str
    """`bare`, `tags`, `boxed`, `hashes`, `line`, `json`, or `script` (the reply as given)."""
    names: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """A short name for probe names and tables: `tags:answer`, `boxed`, `line:Answer`."""
        return f"{self.kind}:{'+'.join(self.names)}" if self.names else self.kind

    def describe(self) -> str:
        """The format in words, for messages: `in <answer> tags`, `as \\boxed{…}`."""
        if self.kind == "tags":
            return "in " + " ".join(f"<{n}>" for n in self.names) + " tags"
        return {
            "bare": "bare",
            "boxed": "as \\boxed{…}",
            "hashes": "after '#### '",
            "line": f"on a line '{self.names[0] if self.names else 'Answer'}: …'",
            "json": "as JSON {" + ", ".join(f'"{n}": …' for n in self.names) + "}",
            "script": "as the script gives it",
        }.get(self.kind, self.key)

    def render(self, answer: str) -> str:
        """`answer` written in this format."""
        if self.kind == "tags":
            return "\n".join(f"<{n}>{answer}</{n}>" for n in self.names)
        if self.kind == "boxed":
            return f"\\boxed{{{answer}}}"
        if self.kind == "hashes":
            return f"#### {answer}"
        if self.kind == "line":
            return f"{self.names[0] if self.names else 'Answer'}: {answer}"
        if self.kind == "json":
            return json.dumps({name: _json_value(answer) for name in self.names})
        return answer


BARE = AnswerFormat("bare")
SCRIPT = AnswerFormat("script")
UNIVERSAL: tuple[AnswerFormat, ...] = (
    AnswerFormat("tags", ("answer",)),
    AnswerFormat("boxed"),
    AnswerFormat("line", ("Answer",)),
    AnswerFormat("hashes"),
)
"""Formats many parsers read, played after the task's own when none of those earned the
reward's maximum."""


def named_formats(texts: Iterable[str]) -> list[AnswerFormat]:
    """The answer formats `texts` (a task's system prompt and prompt) ask for, in the order
    they are named."""
    found: list[tuple[int, AnswerFormat]] = []
    for number, text in enumerate(texts):
        offset = number * 1_000_000  # earlier texts (the system prompt) first
        tags = _named_tags(text)
        if tags:
            first = text.find(f"<{tags[0]}>")
            answer_tags = [t for t in tags if _answer_like(t)]
            found.append((offset + first, AnswerFormat("tags", tuple(tags))))
            if len(tags) > 1:
                for tag in answer_tags or tags[-1:]:
                    found.append((offset + first + 1, AnswerFormat("tags", (tag,))))
        if match := _BOXED.search(text):
            found.append((offset + match.start(), AnswerFormat("boxed")))
        if match := _HASHES.search(text):
            found.append((offset + match.start(), AnswerFormat("hashes")))
        for match in _LINE.finditer(text):
            label = " ".join(match.group("label").split())
            found.append((offset + match.start(), AnswerFormat("line", (label,))))
        for match in _JSON_OBJECT.finditer(text):
            keys = tuple(dict.fromkeys(k.group("key") for k in _JSON_KEY.finditer(match.group())))
            answer_keys = tuple(k for k in keys if _answer_like(k))
            if keys:
                found.append((offset + match.start(), AnswerFormat("json", answer_keys or keys)))
    ordered = [fmt for _, fmt in sorted(found, key=lambda item: item[0])]
    return list(dict.fromkeys(ordered))


def candidate_formats(texts: Iterable[str]) -> tuple[list[AnswerFormat], list[AnswerFormat]]:
    """(first, then): the task's own formats and the bare field, played at once; then the
    universal ones not already among them, played only if the first earned less than the
    maximum. At most `MAX_FORMATS` in all."""
    first = list(dict.fromkeys([*named_formats(texts), BARE]))[:MAX_FORMATS]
    keys = {f.key for f in first}
    then = [f for f in UNIVERSAL if f.key not in keys][: max(0, MAX_FORMATS - len(first))]
    return first, then


def same_answer(a: str, b: str) -> bool:
    """Whether two reference answers say the same thing (`42`, ` 42.0 `, `Paris`/`paris`):
    such tasks share one answer, and neither is a wrong answer for the other."""
    ka, kb = _answer_key(a), _answer_key(b)
    if ka == kb:
        return True
    try:
        return float(ka) == float(kb)
    except ValueError:
        return False


def overlapping(a: str, b: str) -> bool:
    """Whether one answer contains the other (`4` in `14`): a lenient reward may rightly
    pay such a pair, so a wrong answer is picked without overlap where one exists."""
    ka, kb = _answer_key(a), _answer_key(b)
    return bool(ka and kb) and (ka in kb or kb in ka)


def _named_tags(text: str) -> list[str]:
    """Tags `text` names as a format: opened and closed (`<answer></answer>`), or followed
    by the word "tag(s)" (`<reversed_text> tags`)."""
    names = []
    for match in _TAG.finditer(text):
        name = match.group("name")
        closed = f"</{name}>" in text
        called_tag = bool(_TAG_WORD.match(text[match.end():].lstrip(" \"'`")))
        if closed or called_tag:
            names.append(name)
    return list(dict.fromkeys(names))


def _answer_like(name: str) -> bool:
    return any(word in name.casefold() for word in ANSWER_WORDS)


def _answer_key(text: str) -> str:
    return " ".join(text.casefold().replace(",", "").split()).strip(" .")


def _json_value(answer: str) -> object:
    if _NUMBER.fullmatch(answer.strip()):
        number = float(answer)
        return int(number) if number.is_integer() and "." not in answer else number
    return answer
