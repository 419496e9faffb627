"""The answer formats a task's prompt names, how an answer is written in each, and which
answers count as the same (pure functions; no verifiers)."""

from __future__ import annotations

import pytest

from vfcheck.checks._answer_formats import (
    BARE,
    MAX_FORMATS,
    UNIVERSAL,
    AnswerFormat,
    candidate_formats,
    named_formats,
    overlapping,
    same_answer,
)
from vfcheck.checks._reference_answer import SPAM_LIMIT, spam_lines

REVERSE_TEXT = ("Reverse the text character-by-character. Put your answer in <reversed_text> "
                "tags.")
GSM8K = ("Solve the grade-school math problem. Reason step by step, then give the final answer "
         "as a single number on the last line, prefixed with '#### ' (e.g. '#### 42').")


@pytest.mark.parametrize(
    ("prompt", "keys", "rendered"),
    [
        (REVERSE_TEXT, ["tags:reversed_text"], "<reversed_text>7</reversed_text>"),
        (GSM8K, ["hashes"], "#### 7"),
        ("Put the final answer in \\boxed{}.", ["boxed"], "\\boxed{7}"),
        ("Answer inside <answer></answer> tags.", ["tags:answer"], "<answer>7</answer>"),
        ("Think in <think></think>, then answer in <answer></answer>.",
         ["tags:think+answer", "tags:answer"], "<think>7</think>\n<answer>7</answer>"),
        ('Reply with JSON: {"reasoning": "...", "answer": 42}', ["json:answer"],
         '{"answer": 7}'),
        ("End with a line Final Answer: X", ["line:Final Answer"], "Final Answer: 7"),
        ("Repeat the message back.", [], None),
        ("The <b>bold</b> word is the answer", ["tags:b"], "<b>7</b>"),
        ("Use x < y and y > z.", [], None),
    ],
)
def test_the_formats_a_prompt_names_come_first_then_bare(
        prompt: str, keys: list[str], rendered: str | None) -> None:
    assert [f.key for f in named_formats([prompt])] == keys
    first, then = candidate_formats([prompt])
    assert [f.key for f in first] == [*keys, "bare"]
    if rendered is not None:
        assert first[0].render("7") == rendered
    assert {f.key for f in then} == {f.key for f in UNIVERSAL} - set(keys)
    assert len(first) + len(then) <= MAX_FORMATS


def test_the_system_prompt_is_read_before_the_prompt() -> None:
    formats = named_formats(["Put the final answer in \\boxed{}.", "Answer: in one line"])
    assert [f.key for f in formats] == ["boxed", "line:Answer"]


def test_each_format_says_what_it_is() -> None:
    assert AnswerFormat("tags", ("answer",)).describe() == "in <answer> tags"
    assert AnswerFormat("boxed").describe() == "as \\boxed{…}"
    assert BARE.describe() == "bare" and BARE.render(" 7 ") == " 7 "
    assert AnswerFormat("json", ("answer",)).render("3.5") == '{"answer": 3.5}'
    assert AnswerFormat("json", ("answer",)).render("Paris") == '{"answer": "Paris"}'


@pytest.mark.parametrize(
    ("a", "b", "same", "overlap"),
    [("42", "42.0", True, True), ("Paris", " paris ", True, True), ("4", "14", False, True),
     ("1,000", "1000", True, True), ("ping", "hello world", False, False)],
)
def test_answers_that_say_the_same_and_answers_that_overlap(
        a: str, b: str, same: bool, overlap: bool) -> None:
    assert same_answer(a, b) is same
    assert overlapping(a, b) is overlap


def test_spam_puts_the_own_answer_first_or_last_and_keeps_it_when_cut() -> None:
    assert spam_lines("7", ["3", "9"], own_first=True) == ["7", "3", "9"]
    assert spam_lines("7", ["3", "9"], own_first=False) == ["3", "9", "7"]
    long = ["x" * 1000] * 50
    for first in (True, False):
        lines = spam_lines("7", long, own_first=first)
        assert "7" in lines and sum(len(line) + 1 for line in lines) <= SPAM_LIMIT + 1
