"""Replies a real model writes in a task's own answer format: hypothesis strategies.

A policy in training writes mostly in the env's format, with content nobody planned for
(`\\boxed{1,000}`, `<answer></answer>`, `{"city": null}`). `replies(fmt, answer)` draws a
reply of format `fmt` (an `AnswerFormat`): content inside the format (empty, whitespace,
separators, signs, exponents, units, LaTeX, words, unicode digits, very long, the reference
answer bent), or the format itself bent (nested, unclosed, two answers, text after it); for
JSON formats the object bent (missing keys, null, wrong types, a list or a string where an
object was asked, extra keys). On a tool task, `tool_call_replies` calls an env tool with
arguments off its schema first (a key missing, null, of the wrong type, extra, huge; no
object at all), then answers in the format: a `DrawnReply`. Alphabets are listed, never
drawn from the whole of unicode: hypothesis would cache its character tables in the
working directory. Pure: no verifiers import; hypothesis is imported by the caller (the
`fuzz` family), never with vfcheck.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vfcheck.checks._answer_formats import AnswerFormat
from vfcheck.checks._probe_results import short

TRICKY_CONTENT: tuple[str, ...] = (
    "", " ", "\n", "1,000", "1,000,000.5", "-0", "+7", "-3", "1e5", "1e309", "-2.5e-3",
    "NaN", "inf", "0x1F", "3/4", "\\frac{1}{2}", "\\sqrt{2}", "$42$", "\\$5", "x = 42",
    "42 apples", "42%", "forty-two", "none", "{}", "\\text{yes}",
    "\u0664\u0662", "\uff14\uff12", "\u00b2", "\u00bd",  # Arabic-Indic, fullwidth, ², ½
)
"""Contents a careless parser trips over (each is one draw; hypothesis also builds more)."""
CONTENT_ALPHABET = "0123456789-+.,eE $%\\{}()/ x="
"""Characters the built contents are made of: numbers and their dressing."""
LONG = 5000
"""Characters of the very long content."""
BENDS: tuple[str, ...] = ("as is", "twice", "then text", "unclosed", "nested", "before text")
"""How the format itself is bent around the content."""
JSON_VALUES_ALPHABET = "abc 0123456789,.-"
ARGUMENT_BENDS: tuple[str, ...] = ("missing", "null", "wrong type", "extra", "huge", "empty",
                                   "not an object")
"""How a tool call's valid arguments are bent off their schema."""
WRONG_TYPES: tuple[Any, ...] = ("x", "", -1, 0, 1.5, True, [], {}, [1, "a"], {"x": None})
"""Values of another type than the schema asks for (one of them is always another type)."""
NOT_OBJECTS: tuple[str, ...] = ("[]", "null", '"text"', "42", "[{}]")
"""Arguments that are JSON, but no object."""
HUGE_STRING = 10_000
"""Characters of the huge string argument."""
LAST_TOOL_RESULT = "{last_tool_result}"
"""The reply after a tool call that echoes the tool's result (a script's placeholder)."""


@dataclass(frozen=True)
class DrawnReply:
    """One reply hypothesis drew: `text`, after one call of `tool` with the raw JSON
    `arguments` when `tool` is set (`text` may echo the result: `LAST_TOOL_RESULT`)."""

    text: str
    tool: str | None = None
    arguments: str | None = None

    def describe(self, limit: int = 1_000_000) -> str:
        """The reply as a message quotes it, each part cut to `limit` characters:
        `'\\boxed{}'`, or `calc_add({"a": null}), then '...'`."""
        said = quoted(ends(self.text, limit))
        if self.tool is None:
            return said
        return f"{self.tool}({short(self.arguments or '', limit)}), then {said}"

    def turns(self) -> list[dict[str, Any]]:
        """The reply as a script's turns (`[[task.turn]]`)."""
        first = [] if self.tool is None else [{"tool": self.tool,
                                               "raw_arguments": self.arguments or "{}"}]
        return [*first, {"reply": self.text}]


def ends(text: str, limit: int) -> str:
    """`text` cut to about `limit` characters in its middle: a long reply's answer is at its
    end."""
    if len(text) <= limit:
        return text
    half = max(1, limit // 2)
    return f"{text[:half]} … {text[-half:]}"


def quoted(text: str) -> str:
    """`text` in quotes as written (`'\\boxed{}'` reads as the reply did), repr where it
    holds what a line cannot show (a newline, a control character)."""
    return f"'{text}'" if text.isprintable() and "'" not in text else repr(text)


def replies(fmt: AnswerFormat, answer: str | None) -> Any:
    """A strategy of replies written in `fmt` (content and format bent); `answer` is the
    task's reference answer, if it has one (its variants are drawn too)."""
    import hypothesis.strategies as st

    if fmt.kind == "json":
        return json_replies(fmt, answer)
    return st.builds(bent, st.just(fmt), contents(answer), st.sampled_from(BENDS))


def contents(answer: str | None) -> Any:
    """A strategy of answer contents: tricky ones, built ones, and the reference bent."""
    import hypothesis.strategies as st

    built = text_of(CONTENT_ALPHABET, max_size=12)
    numbers = st.integers(min_value=-10**7, max_value=10**7).map(lambda n: f"{n:,}")
    choices = [st.sampled_from(TRICKY_CONTENT), built, numbers,
               st.just("9" * LONG)]
    if answer:
        choices.append(st.sampled_from(answer_variants(answer)))
    return st.one_of(*choices)


def text_of(alphabet: str, max_size: int) -> Any:
    """Strings of `alphabet`'s characters, up to `max_size`, shrinking toward shorter ones
    and the alphabet's first characters. Not `st.text(alphabet=...)`: hypothesis resolves
    even a fixed alphabet through its table of every unicode character, which it builds
    (about a second of CPU) in each new project's `.vfcheck/hypothesis`, as in every CI
    run's fresh checkout."""
    import hypothesis.strategies as st

    return st.lists(st.sampled_from(alphabet), max_size=max_size).map("".join)


def answer_variants(answer: str) -> list[str]:
    """The reference answer as a model may dress it: signs, units, spacing, a sentence."""
    return [answer, f" {answer} ", f"+{answer}", f"{answer}.0", f"{answer} units",
            f"${answer}$", f"\\text{{{answer}}}", f"The answer is {answer}.", f"{answer}\n"]


def bent(fmt: AnswerFormat, content: str, how: str) -> str:
    """`content` written in `fmt`, the format bent `how` (one of `BENDS`)."""
    once = fmt.render(content)
    if how == "twice":
        return once + "\n" + fmt.render(content + "1")
    if how == "then text":
        return once + " and that is my final answer."
    if how == "before text":
        return "Let me think. " + once
    if how == "nested":
        return fmt.render(once)
    if how == "unclosed":
        if fmt.kind == "boxed":
            return once[:-1]
        if fmt.kind == "tags" and fmt.names:
            return once.rsplit(f"</{fmt.names[-1]}>", 1)[0]
        return once[: max(0, len(once) - 1)]
    return once


def json_replies(fmt: AnswerFormat, answer: str | None) -> Any:
    """A strategy of JSON replies for a `json` format whose keys are `fmt.names`."""
    import hypothesis.strategies as st

    scalars = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000),
                        st.floats(allow_nan=True, allow_infinity=True),
                        text_of(JSON_VALUES_ALPHABET, max_size=8),
                        *([st.just(answer)] if answer else []))
    values = st.one_of(scalars, st.lists(scalars, max_size=3),
                       st.dictionaries(st.sampled_from(("value", "x")), scalars, max_size=2))
    keys = list(fmt.names) or ["answer"]
    objects = st.fixed_dictionaries(
        {}, optional={k: values for k in [*keys, "extra"]})
    shapes = st.one_of(
        objects,
        st.lists(objects, max_size=2),  # a list where an object was asked
        scalars,  # a string, a number or null where an object was asked
    )
    return st.builds(json_text, shapes, st.sampled_from(("as is", "then text", "unclosed")))


def json_text(value: object, how: str) -> str:
    """`value` as JSON text (NaN and Infinity as Python writes them), bent `how`."""
    text = json.dumps(value)
    if how == "then text":
        return text + "\nThat is my answer."
    if how == "unclosed":
        return text[:-1] if len(text) > 1 else text
    return text


def tool_call_replies(valid: Mapping[str, dict[str, Any]], then: Any) -> Any:
    """A strategy of `DrawnReply`s calling one env tool of `valid` (tool name -> arguments
    that satisfy its schema) with those arguments bent off the schema (`ARGUMENT_BENDS`),
    then replying with a text of `then` or the tool's result echoed."""
    import hypothesis.strategies as st

    replies_after = st.one_of(st.just(LAST_TOOL_RESULT), then)
    return st.builds(
        lambda name, how, key, value, text: DrawnReply(
            text, name, bent_arguments(valid[name], how, key, value)),
        st.sampled_from(sorted(valid)), st.sampled_from(ARGUMENT_BENDS),
        st.integers(0, 7), st.sampled_from(WRONG_TYPES), replies_after)


def bent_arguments(valid: dict[str, Any], how: str, key: int, value: Any) -> str:
    """`valid` bent `how` (one of `ARGUMENT_BENDS`) at its `key`-th key (modulo their
    number), as JSON text; `value` is the wrong-typed value, if one is needed."""
    if how == "not an object":
        return NOT_OBJECTS[key % len(NOT_OBJECTS)]
    bent_args = dict(valid)
    names = list(bent_args)
    name = names[key % len(names)] if names else None
    if how == "empty" or name is None:
        bent_args = {} if how != "extra" else {"unexpected": value}
    elif how == "missing":
        del bent_args[name]
    elif how == "null":
        bent_args[name] = None
    elif how == "wrong type":
        bent_args[name] = other_type(bent_args[name], value)
    elif how == "extra":
        bent_args["unexpected"] = value
    elif how == "huge":
        was = bent_args[name]
        bent_args[name] = ("x" * HUGE_STRING if isinstance(was, str)
                           else -(10**30) if key % 2 else 10**30)
    return json.dumps(bent_args)


def other_type(was: Any, value: Any) -> Any:
    """`value`, unless it has the type of `was`: then the first of `WRONG_TYPES` that has
    not (a string for a number, a number for a string)."""
    if type(value) is not type(was):
        return value
    return next(v for v in WRONG_TYPES if type(v) is not type(was))
