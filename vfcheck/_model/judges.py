"""Judge calls: verdict replies rendered in the judge's own labels, and judge policies.

env code calls a judge while it scores an episode (`verifiers/v1/judge.py`): one
non-streaming chat completion whose reply its parser reads as a verdict. A `Reply.verdict`
says which verdict to give (`positive`, `negative`, `garbage`); `render_verdict` turns it
into what that judge understands:

- labels are the ones the prompt asks for: `"X" or "Y"` (verifiers' reference judge ends
  `Respond either "{positive}" or "{negative}" only.`), `Reply X if ..., otherwise Y`
  (verifiers' `interception` env: `Reply BLOCK if ...; otherwise ALLOW`), `answer X or Y`
  in capitals, a known pair written `yes/no`, `correct or incorrect`, `A/B`, `pass/fail`,
  `true/false` ..., or a rubric's `answer one of, worst to best: a, b, c` (best = positive,
  worst = negative). An `X if ..., otherwise Y` instruction wins wherever it stands (the
  judged text that follows it may quote other words); else the last pair in the prompt
  wins (the instruction closes it). Labels given by the caller win over all; a schema's
  enum comes next; `yes`/`no` is the last format tried.
- a judge with neither a schema nor labels given is answered in a format its prompt states
  (`vfcheck._model.verdict_formats`): a JSON example or tags first, then its labels, a
  scale, a letter grade, `yes`/`no` last. Where the call is answered in-process, the
  judge's own `parse` (`vfcheck._model.judge_parse`) must accept both replies of a format
  and read them apart before it is used; when it accepts none, the reply is marked
  `unreadable` (what was tried) and the checks that need a verdict skip on it.
- a structured-output judge (`response_format` with a JSON schema, as
  `beta.chat.completions.parse` sends it) gets a JSON object valid for the schema: choice
  fields take the positive label (else the last choice) or the negative one (else the first),
  booleans true/false, numbers their maximum/minimum; `garbage` is an object the schema
  rejects.
- a rubric judge (`judges/rubric.py`: criteria lines `- name: text (answer one of, worst to
  best: ...)`) gets a `{"verdicts": [...]}` object naming every criterion.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from vfcheck._model.judge_parse import calling_judge, note_unreadable
from vfcheck._model.policies import judge_only
from vfcheck._model.schema_args import KEEP, generate_arguments, number_bounds, schema_type
from vfcheck._model.types import ModelRequest, Policy, Reply, Verdict
from vfcheck._model.verdict_formats import VerdictFormat, example_formats, prompt_formats

__all__ = [
    "DEFAULT_VERDICT",
    "FALLBACK_LABELS",
    "default_judge_policy",
    "garbage_text",
    "judge_policy",
    "label_source",
    "prompt_candidates",
    "read_labels",
    "render_verdict",
    "rubric_criteria",
]

DEFAULT_VERDICT = Verdict.POSITIVE
"""The verdict of a judge call no policy answered (see `default_judge_policy`)."""
FALLBACK_LABELS: tuple[str, str] = ("yes", "no")
"""(positive, negative) when the judge's prompt names no labels vfcheck can read."""
GARBAGE_TEXTS = ("I cannot decide.", "Unable to judge this response.", "???")
"""Replies matching no label; the first that contains neither label as a word is sent."""
KNOWN_PAIRS: tuple[tuple[str, str], ...] = (
    ("yes", "no"),
    ("correct", "incorrect"),
    ("pass", "fail"),
    ("true", "false"),
    ("right", "wrong"),
    ("valid", "invalid"),
    ("accept", "reject"),
    ("A", "B"),
)
"""Label pairs recognised unquoted, (positive, negative); letters match in capitals only."""
POSITIVE_WORDS = frozenset({"yes", "correct", "pass", "passed", "true", "right", "valid",
                            "accept", "good"})
NEGATIVE_WORDS = frozenset({"no", "incorrect", "fail", "failed", "false", "wrong", "invalid",
                            "reject", "bad"})
"""Words that say which side of a verdict a label is, whatever it is paired with."""

_QUOTE_OPEN = "\"'`\u201c\u2018"
_QUOTE_CLOSE = "\"'`\u201d\u2019"
_LABEL = rf"[^{_QUOTE_OPEN}{_QUOTE_CLOSE}\n]{{1,40}}"
_QUOTED_PAIR = re.compile(
    rf"[{_QUOTE_OPEN}](?P<a>{_LABEL})[{_QUOTE_CLOSE}]\s*,?\s*(?:or|/|\|)\s*"
    rf"[{_QUOTE_OPEN}](?P<b>{_LABEL})[{_QUOTE_CLOSE}]",
    re.IGNORECASE,
)
_QUOTED_LIST = re.compile(
    rf"[{_QUOTE_OPEN}](?P<a>{_LABEL})[{_QUOTE_CLOSE}](?:\s*,\s*[{_QUOTE_OPEN}]{_LABEL}"
    rf"[{_QUOTE_CLOSE}])+\s*,?\s*(?:or|/|\|)\s*[{_QUOTE_OPEN}](?P<b>{_LABEL})[{_QUOTE_CLOSE}]",
    re.IGNORECASE,
)
"""Three or more quoted labels, best first (`"VERDICT: A", "VERDICT: B", or "VERDICT: C"`,
curators-eye's grade): the first is positive, the last negative, not the last two."""
_VERB = r"(?i:reply|respond|answer|output|say|return|write|print)(?:\s+(?i:with|only|just))*"
_BARE_LABEL = r"[A-Z][A-Z0-9_]*(?![\w])"
"""An unquoted label: a word in capitals (`BLOCK`, `CORRECT`, `A`)."""


def _any_label(group: str) -> str:
    """A quoted label (group `<group>q`) or an unquoted one (`<group>w`): capitals or a
    known verdict word."""
    return (rf"[{_QUOTE_OPEN}](?P<{group}q>{_LABEL})[{_QUOTE_CLOSE}]|(?P<{group}w>{_BARE_LABEL}|"
            r"(?i:yes|no|true|false|correct|incorrect|pass|fail|valid|invalid)(?!\w))")


_IF_OTHERWISE = re.compile(
    rf"(?<!\w){_VERB}\s*:?\s+(?:{_any_label('a')})\s+(?i:if|when)\b[^\n]*?"
    rf"(?i:otherwise|else)\b[\s,:;]*(?:{_VERB}\s+)?(?:{_any_label('b')})"
)
_VERB_OR = re.compile(
    rf"(?<!\w){_VERB}(?:\s+(?i:either))?\s*:?\s+(?P<a>{_BARE_LABEL})\s*,?\s+(?i:or)\s+"
    rf"(?P<b>{_BARE_LABEL})"
)
_WORST_TO_BEST = re.compile(r"worst\s+to\s+best\s*:\s*(?P<choices>[^)\n]+)", re.IGNORECASE)
_CRITERION = re.compile(
    r"^\s*-\s*(?P<name>[^:\n]+):.*\(answer one of, worst to best:\s*(?P<choices>[^)\n]+)\)\s*$",
    re.MULTILINE,
)
_VERDICT_NAMES = re.compile(
    r"verdict|label|answer|choice|decision|grade|judg|result|correct|rating", re.IGNORECASE
)
"""Names of string fields of a judge's schema that hold the verdict label."""
_RUBRIC_REASON = "scripted verdict (vfcheck)"


def judge_policy(answer: Verdict | str | Reply, *, labels: tuple[str, str] | None = None,
                 example: str | None = None) -> Policy:
    """Answer every judge call with `answer` (a verdict kind, or any `Reply`, e.g.
    `Reply.text("raw text")`); no opinion on agent turns. Compose with `first_of`.
    `example`: a reply in the judge's own format (a script's `judge_reply`), whose format
    a verdict takes first (`verdict_formats.example_formats`)."""
    reply = (answer if isinstance(answer, Reply)
             else Reply.verdict(answer, labels=labels, example=example))
    return judge_only(lambda request: reply)


def default_judge_policy() -> Policy:
    """The scripted model's answer to a judge call nothing else answered: the verdict of
    its scope (`EpisodeRef.judge`), else `positive`.

    Deliberate: an ordinary episode then runs the reward's positive branch, as it would with
    a judge that agrees the (scripted) answer is right, so a judge env scores like any other;
    reward probes play the negative and garbage branches on purpose. vfcheck's `gold` check
    scores the task's reference under a `positive` scope and `noop` the untouched task under
    a `negative` one, as a real judge would grade them. Never an echo of the judge's prompt
    (the agent default), which no judge parser reads as a verdict.
    """
    replies = {kind: Reply.verdict(kind) for kind in Verdict}

    def answer(request: ModelRequest) -> Reply:
        scope = request.episode.judge if request.episode is not None else None
        return replies[scope or DEFAULT_VERDICT]

    return judge_only(answer)


def render_verdict(reply: Reply, request: ModelRequest, seed: int = 0) -> Reply:
    """`reply` (a `Reply.verdict`) as sent to `request`: `content` filled in, `labels` the
    labels used. A reply that is not an unrendered verdict comes back unchanged."""
    kind = reply.verdict_kind
    if kind is None or reply.content is not None or reply.tool_calls:
        return reply
    prompt = request.prompt_text
    schema = request.response_schema
    criteria = rubric_criteria(prompt)
    if reply.labels is None and schema is None and not (criteria and '"verdicts"' in prompt):
        return _in_prompt_format(kind, request, reply.example)
    labels = (reply.labels or read_labels(prompt) or schema_labels(schema)
              or FALLBACK_LABELS)
    if schema is not None:
        content = _schema_verdict(kind, schema, labels, criteria, seed)
    elif criteria and '"verdicts"' in prompt and kind is not Verdict.GARBAGE:
        content = _rubric_verdict(kind, criteria)
    elif kind is Verdict.GARBAGE:
        content = garbage_text(labels)
    else:
        content = labels[0] if kind is Verdict.POSITIVE else labels[1]
    return Reply(content=content, verdict_kind=kind, labels=labels)


def prompt_candidates(prompt: str, example: str | None = None) -> list[VerdictFormat]:
    """The verdict formats to try on a judge with neither a schema nor labels given, in
    order: the format of `example` (a script's `judge_reply`: its JSON object, tags,
    number or grade, or the prompt's labels when it is one of them), a JSON example or tags
    the prompt writes, its labels, a scale or a letter grade it states, and `yes`/`no`
    last."""
    formats = prompt_formats(prompt)
    structural = [f for f in formats if f.kind.startswith(("a JSON", "a score in"))]
    others = [f for f in formats if f not in structural]
    labels = read_labels(prompt)
    read = [VerdictFormat(*labels, kind="labels", where="its prompt")] if labels else []
    fallback = VerdictFormat(*FALLBACK_LABELS, kind="labels", where="fallback (none read)")
    scripted: list[VerdictFormat] = []
    if example is not None:
        said = example.strip().casefold()
        for pair in [labels] if labels else []:
            if said in (pair[0].casefold(), pair[1].casefold()):
                scripted.append(VerdictFormat(*pair, kind="labels",
                                              where=f"the script's judge_reply {example!r}"))
        scripted += [] if scripted else example_formats(example, prompt)
    return [*scripted, *structural, *read, *others, fallback]


def _in_prompt_format(kind: Verdict, request: ModelRequest, example: str | None = None
                      ) -> Reply:
    """A verdict in the first format the judge's own parser accepts and tells apart (when
    vfcheck cannot reach the parser: the script's reply's format, else the labels read,
    else the first format); none accepted: a reply no format says, marked `unreadable`
    with what was tried."""
    prompt = request.prompt_text
    candidates = prompt_candidates(prompt, example)
    judge = calling_judge()
    if judge is None or judge.parse is None:  # unchecked: labels read win, as they did
        chosen: VerdictFormat | None = next(
            (c for c in candidates if c.where.startswith(("the script's", "its prompt"))),
            candidates[0])
    else:
        chosen = next((c for c in candidates if judge.tells_apart(c.positive, c.negative)),
                      None)
    if chosen is None:
        assert judge is not None
        first_line = next((line.strip() for line in prompt.splitlines() if line.strip()), "")
        tried = "; ".join(f"{c.kind} {c.positive}/{c.negative}" for c in candidates)
        why = (f"judge {judge.name} ({judge.where}) reads no verdict format vfcheck could "
               f"find in its prompt ({short_line(first_line)!r}): its parse refused, or "
               f"could not tell apart, each of: {tried}")
        note_unreadable(request.task.index if request.task is not None else None, why)
        return Reply(content=garbage_text(FALLBACK_LABELS), verdict_kind=kind, unreadable=why)
    labels = (chosen.positive, chosen.negative)
    if kind is Verdict.GARBAGE:
        content = garbage_text(labels)
    else:
        content = labels[0] if kind is Verdict.POSITIVE else labels[1]
    if chosen.where.startswith("the script's"):
        described: str | None = f"{chosen.kind}, in the format of {chosen.where}"
    else:
        described = (None if chosen.kind == "labels"
                     else f"{chosen.kind}, read from its prompt: {chosen.where!r}")
    return Reply(content=content, verdict_kind=kind, labels=labels, verdict_format=described)


def short_line(line: str, limit: int = 100) -> str:
    return line if len(line) <= limit else line[: limit - 3] + "..."


def label_source(request: ModelRequest, reply: Reply) -> str:
    """Where the labels of a rendered verdict `reply` came from, for reports: `its prompt`,
    `its schema's enum`, `the caller`, `fallback (none read)`, or the format read from the
    prompt (`a JSON object (...), read from its prompt: '...'`)."""
    labels = reply.labels
    if labels is None:
        return "none"
    if reply.verdict_format is not None:
        return reply.verdict_format
    if read_labels(request.prompt_text) == labels:
        return "its prompt"
    if schema_labels(request.response_schema) == labels:
        return "its schema's enum"
    return "fallback (none read)" if labels == FALLBACK_LABELS else "the caller"


def schema_labels(schema: Mapping[str, Any] | None) -> tuple[str, str] | None:
    """(positive, negative) from a structured judge's verdict field: the enum's last and
    first choices, unless a known pair says otherwise."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    for name, spec in (properties.items() if isinstance(properties, dict) else []):
        choices = spec.get("enum") if isinstance(spec, dict) else None
        if (_VERDICT_NAMES.search(name) and isinstance(choices, list) and len(choices) >= 2
                and all(isinstance(c, str) for c in choices)):
            return _polarised(choices[-1], choices[0])
    return None


def read_labels(prompt: str) -> tuple[str, str] | None:
    """The (positive, negative) labels a judge prompt asks for, or None (module docstring)."""
    for match in _IF_OTHERWISE.finditer(prompt):
        a = match.group("aq") or match.group("aw")
        b = match.group("bq") or match.group("bw")
        if a.strip() and b.strip() and a.strip().casefold() != b.strip().casefold():
            return _polarised(a.strip(), b.strip())
    found: list[tuple[int, tuple[str, str]]] = []
    for match in _VERB_OR.finditer(prompt):
        a, b = match.group("a"), match.group("b")
        if a != b:
            found.append((match.end(), _polarised(a, b)))
    for match in _QUOTED_LIST.finditer(prompt):  # before the pairs it ends with: a tie
        a, b = match.group("a").strip(), match.group("b").strip()  # goes to the list
        if a and b and a.casefold() != b.casefold():
            found.append((match.end(), _polarised(a, b)))
    for match in _QUOTED_PAIR.finditer(prompt):
        a, b = match.group("a").strip(), match.group("b").strip()
        if a and b and a.casefold() != b.casefold():
            found.append((match.end(), _polarised(a, b)))
    for match in _WORST_TO_BEST.finditer(prompt):
        choices = _split_choices(match.group("choices"))
        if len(choices) >= 2:
            found.append((match.end(), (choices[-1], choices[0])))
    for positive, negative in KNOWN_PAIRS:
        flags = 0 if len(positive) == 1 else re.IGNORECASE
        for first, second in ((positive, negative), (negative, positive)):
            pattern = (
                rf"(?<!\w)({re.escape(first)})\s*(?:/|\||\bor\b)\s*({re.escape(second)})(?!\w)"
            )
            for match in re.finditer(pattern, prompt, flags):
                a, b = match.group(1), match.group(2)
                found.append((match.end(), (a, b) if first == positive else (b, a)))
    return max(found, key=lambda item: item[0])[1] if found else None


def rubric_criteria(prompt: str) -> list[tuple[str, list[str]]]:
    """The criteria of a verifiers rubric prompt, `(name, choices worst -> best)` each."""
    criteria = []
    for match in _CRITERION.finditer(prompt):
        choices = _split_choices(match.group("choices"))
        if len(choices) >= 2:
            criteria.append((match.group("name").strip(), choices))
    return criteria


def garbage_text(labels: tuple[str, str]) -> str:
    """A reply that names neither label as a word (so `parse_judge_choice` finds none)."""
    for text in GARBAGE_TEXTS:
        if not any(
            re.search(rf"(?<!\w){re.escape(label)}(?!\w)", text, re.IGNORECASE)
            for label in labels
        ):
            return text
    return GARBAGE_TEXTS[-1]


def _polarised(a: str, b: str) -> tuple[str, str]:
    """(a, b) as (positive, negative): the order written, unless a known pair, or a word
    that says a verdict (`WRONG`, `correct`), says otherwise."""
    for positive, negative in KNOWN_PAIRS:
        if (a.casefold(), b.casefold()) == (negative.casefold(), positive.casefold()):
            return b, a
    ka, kb = a.casefold(), b.casefold()
    if (ka in NEGATIVE_WORDS and kb not in NEGATIVE_WORDS) or (
            kb in POSITIVE_WORDS and ka not in POSITIVE_WORDS):
        return b, a
    return a, b


def _split_choices(text: str) -> list[str]:
    return [c.strip().strip("\"'`.") for c in text.split(",") if c.strip().strip("\"'`.")]


def _rubric_verdict(kind: Verdict, criteria: list[tuple[str, list[str]]]) -> str:
    verdicts = [
        {
            "name": name,
            "reason": _RUBRIC_REASON,
            "verdict": choices[-1] if kind is Verdict.POSITIVE else choices[0],
        }
        for name, choices in criteria
    ]
    return json.dumps({"verdicts": verdicts})


def _schema_verdict(
    kind: Verdict,
    schema: Mapping[str, Any],
    labels: tuple[str, str],
    criteria: list[tuple[str, list[str]]],
    seed: int,
) -> str:
    if kind is Verdict.GARBAGE:
        return _invalid_for(schema) or garbage_text(labels)
    properties = schema.get("properties")
    if criteria and isinstance(properties, dict) and "verdicts" in properties:
        return _rubric_verdict(kind, criteria)
    positive = kind is Verdict.POSITIVE
    label = labels[0] if positive else labels[1]

    def verdict_value(node: Mapping[str, Any], name: str) -> Any:
        if any(key in node for key in ("anyOf", "oneOf", "allOf")):
            return KEEP  # decided on the concrete option the generator picks
        choices = node.get("enum")
        if isinstance(choices, list) and choices:
            by_text = {c.casefold(): c for c in choices if isinstance(c, str)}
            if label.casefold() in by_text:
                return by_text[label.casefold()]
            return choices[-1] if positive else choices[0]
        if "type" not in node:
            return KEEP
        kind_of = schema_type(node)
        if kind_of == "boolean":
            return positive
        if kind_of in ("integer", "number"):
            step = 1 if kind_of == "integer" else 0.01
            low, high = number_bounds(node, 0, 1, step=step)
            if kind_of == "integer":
                return math.floor(high) if positive else math.ceil(low)
            return high if positive else low
        if kind_of == "string" and _VERDICT_NAMES.search(name):
            return label
        return KEEP

    value = generate_arguments(schema, seed=seed, tool_name="judge", override=verdict_value)
    return json.dumps(value)


def _invalid_for(schema: Mapping[str, Any]) -> str | None:
    """A JSON object `schema` rejects: `{}` when it requires a property, else one typed
    property of the wrong type; None when any object would do."""
    if isinstance(schema.get("required"), list) and schema["required"]:
        return "{}"
    properties = schema.get("properties")
    for name, spec in (properties.items() if isinstance(properties, dict) else []):
        if isinstance(spec, dict) and ("type" in spec or "enum" in spec):
            wrong: Any = "garbage" if schema_type(spec) == "object" else {"vfcheck": "garbage"}
            return json.dumps({name: wrong})
    if schema.get("additionalProperties") is False:
        return json.dumps({"vfcheck_garbage": True})
    return None
