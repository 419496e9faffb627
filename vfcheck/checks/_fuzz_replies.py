"""Replies a real model writes in a task's own answer format: hypothesis strategies.

A policy in training writes mostly in the env's format, with content nobody planned for
(`\\boxed{1,000}`, `<answer></answer>`, `{"city": null}`). `replies(fmt, answer)` draws a
reply of format `fmt` (an `AnswerFormat`): content inside the format (empty, whitespace,
separators, signs, exponents, units, LaTeX, words, unicode digits, very long, the reference
answer bent), or the format itself bent (nested, unclosed, two answers, text after it); for
JSON formats the object bent (missing keys, null, wrong types, a list or a string where an
object was asked, extra keys). Alphabets are listed, never drawn from the whole of unicode:
hypothesis would cache its character tables in the working directory. Pure: no verifiers
import; hypothesis is imported by the caller (the `fuzz` family), never with vfcheck.
"""

from __future__ import annotations

import json
from typing import Any

from vfcheck.checks._answer_formats import AnswerFormat

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

    built = st.text(alphabet=CONTENT_ALPHABET, max_size=12)
    numbers = st.integers(min_value=-10**7, max_value=10**7).map(lambda n: f"{n:,}")
    choices = [st.sampled_from(TRICKY_CONTENT), built, numbers,
               st.just("9" * LONG)]
    if answer:
        choices.append(st.sampled_from(answer_variants(answer)))
    return st.one_of(*choices)


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
                        st.text(alphabet=JSON_VALUES_ALPHABET, max_size=8),
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
