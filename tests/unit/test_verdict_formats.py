"""Verdict formats read from a judge's prompt (a JSON example, a score in tags, a scale, a
letter grade), and the judge's own parser deciding which is sent (pure functions; no
verifiers: the judge module is a stand-in with verifiers' names). The real judges are played
in tests/integration/test_reward_probes.py (vfc-judge-json, -tags, -unreadable)."""

from __future__ import annotations

import json
import re
import sys
import types
from typing import Any

import pytest

from vfcheck._model import ModelRequest, Reply, judge_parse
from vfcheck._model.judge_parse import calling_judge, unreadable_judge
from vfcheck._model.judges import label_source, prompt_candidates, render_verdict
from vfcheck._model.types import TaskRef
from vfcheck._model.verdict_formats import example_formats, prompt_formats

SUMMARIZE = (  # the public `summarize` env's judge, as issue #35 quotes it
    "covered: how many of the reference's points the summary covers, from 0 to 3.\n"
    'Reply with one JSON object and nothing else, in the form {"faithful": true, "covered": 2}'
)
TAGS = "Rate the response on a scale of 1 to 10.\nPut the score in <score></score> tags."


@pytest.fixture(autouse=True)
def _judges_marked_here_stay_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """The unreadable judges noted are the worker process's (one env per worker): a test
    here must not leave its judge to skip a later test's findings in the same process."""
    monkeypatch.setattr(judge_parse, "_UNREADABLE", {})


@pytest.mark.parametrize(
    ("prompt", "first"),
    [
        (SUMMARIZE, ('{"faithful": true, "covered": 3}', '{"faithful": false, "covered": 0}')),
        ('Return JSON like {"score": 0.5, "reason": "..."}',
         ('{"score": 1, "reason": "..."}', '{"score": 0, "reason": "..."}')),
        ('Answer in JSON: {"quality": 4}. quality is between 1 and 5.',
         ('{"quality": 5}', '{"quality": 1}')),
        (TAGS, ("<score>10</score>", "<score>1</score>")),
        ("Score it from 0 to 100. Output only the number.", ("100", "0")),
        ("Give the essay a letter grade (A-F).", ("A", "F")),
        ('JSON only: {"ok": true, "points": 1}\npoints: how many are right, 0-4.',
         ('{"ok": true, "points": 4}', '{"ok": false, "points": 0}')),
        ("Grade: A, B, C or D.", ("A", "D")),
    ],
)
def test_a_format_stated_in_the_prompt_gives_a_positive_and_a_negative_reply(
        prompt: str, first: tuple[str, str]) -> None:
    formats = prompt_formats(prompt)
    assert formats, prompt
    assert (formats[0].positive, formats[0].negative) == first


@pytest.mark.parametrize("prompt", [
    "Assess whether the response gives the reference answer.",
    'The task was: print {"a": 1}. Did the response do it?',  # JSON in the task, not asked
    "Reply CORRECT if it matches the reference, otherwise WRONG.",
])
def test_a_prompt_that_states_no_format_gives_none(prompt: str) -> None:
    assert prompt_formats(prompt) == []


def test_labels_come_after_a_json_example_or_tags_and_yes_no_is_tried_last() -> None:
    tried = prompt_candidates(SUMMARIZE + "\nfaithful is true or false.")
    assert tried[0].kind.startswith("a JSON object")
    assert (tried[-1].positive, tried[-1].negative) == ("yes", "no")
    assert [c.where for c in prompt_candidates("Reply CORRECT if so, otherwise WRONG.")] == [
        "its prompt", "fallback (none read)"]


def request(prompt: str, task: int = 0) -> ModelRequest:
    return ModelRequest(body={"model": "grader", "messages": [{"role": "user",
                                                               "content": prompt}]},
                        kind="judge", task=TaskRef(index=task))


class JudgeResponse:
    def __init__(self, text: str, parsed: Any = None) -> None:
        self.text, self.parsed = text, parsed


class Judge:
    """The shape `vfcheck._model.judge_parse` looks for: `complete(self, ..., parse=)`."""

    def parse(self, response: JudgeResponse) -> Any:
        return response.text

    def complete(self, prompt: str, kind: str, parse: Any = None) -> Reply:
        return render_verdict(Reply.verdict(kind), request(prompt, task=7))


class JsonJudge(Judge):
    def parse(self, response: JudgeResponse) -> Any:
        match = re.search(r"\{.*\}", response.text)
        if match is None:
            raise ValueError(f"no JSON object: {response.text!r}")
        return json.loads(match.group(0))


class NumberJudge(Judge):
    def parse(self, response: JudgeResponse) -> Any:
        return int(response.text.strip())


class ProtocolJudge(Judge):
    def parse(self, response: JudgeResponse) -> Any:
        if response.text not in ("VERDICT::ACCEPT", "VERDICT::DENY"):
            raise ValueError(response.text)
        return response.text


def judge_module(monkeypatch: pytest.MonkeyPatch) -> None:
    """verifiers' judge module as far as the parser probe reads it (names only). Set in the
    test's body: the tier's guard hides `verifiers.*` modules from a test's call phase."""
    module = types.ModuleType("verifiers.v1.judge")
    module.Judge = Judge  # type: ignore[attr-defined]
    module.JudgeResponse = JudgeResponse  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "verifiers.v1.judge", module)


def test_no_judge_on_the_stack_sends_the_first_format_unchecked() -> None:
    assert calling_judge() is None
    sent = render_verdict(Reply.verdict("positive"), request(TAGS))
    assert sent.content == "<score>10</score>"
    assert label_source(request(TAGS), sent).startswith("a score in <score> tags, 1 to 10")


def test_the_judges_own_parser_picks_the_format_it_reads_and_tells_apart(
        monkeypatch: pytest.MonkeyPatch) -> None:
    judge_module(monkeypatch)
    prompt = "faithful is true or false.\n" + SUMMARIZE  # labels, then the JSON example
    judge = JsonJudge()
    assert calling_judge() is None
    positive = judge.complete(prompt, "positive", parse=judge.parse)
    negative = judge.complete(prompt, "negative", parse=judge.parse)
    assert json.loads(positive.content or "") == {"faithful": True, "covered": 3}
    assert json.loads(negative.content or "") == {"faithful": False, "covered": 0}
    assert positive.unreadable is None and unreadable_judge(7) is None
    garbage = judge.complete(SUMMARIZE, "garbage", parse=judge.parse)
    with pytest.raises(ValueError, match="no JSON object"):
        judge.parse(JudgeResponse(garbage.content or ""))
    numbers = NumberJudge()  # refuses the tags the prompt names first: the bare scale next
    sent = numbers.complete(TAGS, "positive", parse=numbers.parse)
    assert sent.content == "10" and sent.labels == ("10", "1")


def test_a_judge_that_reads_no_format_found_is_marked_unreadable_naming_what_was_tried(
        monkeypatch: pytest.MonkeyPatch) -> None:
    judge_module(monkeypatch)
    judge = ProtocolJudge()
    prompt = "Assess the response by the house protocol.\n\nResponse: hi"
    sent = judge.complete(prompt, "positive", parse=judge.parse)
    assert sent.labels is None and sent.content != "yes"
    why = sent.unreadable or ""
    assert "ProtocolJudge" in why and "test_verdict_formats.py:" in why
    assert "'Assess the response by the house protocol.'" in why and "yes/no" in why
    assert unreadable_judge(7) == why


# ----------------------------------------------- a script's judge_reply: the judge's format


@pytest.mark.parametrize(
    ("example", "prompt", "pair"),
    [
        ('{"faithful": true, "covered": 2}', SUMMARIZE,
         ('{"faithful": true, "covered": 3}', '{"faithful": false, "covered": 0}')),
        ('{"faithful": true, "covered": 3}', "Give the service's JSON verdict.",
         ('{"faithful": true, "covered": 3}', '{"faithful": false, "covered": 0}')),
        ('Reasoning: fine.\n{"ok": true}', "Grade it.",
         ('Reasoning: fine.\n{"ok": true}', 'Reasoning: fine.\n{"ok": false}')),
        ("<score>7</score>", TAGS, ("<score>10</score>", "<score>1</score>")),
        ("Verdict: <grade>4</grade>", "Grade it.",
         ("Verdict: <grade>4</grade>", "Verdict: <grade>0</grade>")),
        ("8", "Rate it on a scale of 1 to 10.", ("10", "1")),
        ("B", "Give the essay a letter grade (A-D).", ("A", "D")),
    ],
)
def test_a_script_reply_gives_its_format_a_positive_and_a_negative_reply(
        example: str, prompt: str, pair: tuple[str, str]) -> None:
    formats = example_formats(example, prompt)
    assert formats, example
    assert (formats[0].positive, formats[0].negative) == pair
    assert formats[0].where.startswith("the script's judge_reply")


def test_a_script_reply_that_shows_no_format_adds_none_unless_it_is_a_label() -> None:
    assert example_formats("VERDICT::ACCEPT", "Assess it.") == []
    assert example_formats("{}", "Assess it.") == []  # an object that can say nothing
    tried = prompt_candidates("Reply CORRECT if so, otherwise WRONG.", example="WRONG")
    assert (tried[0].positive, tried[0].negative, tried[0].kind) == ("CORRECT", "WRONG",
                                                                     "labels")
    assert tried[0].where == "the script's judge_reply 'WRONG'"


class ScriptedJsonJudge(JsonJudge):
    """A judge whose prompt states no format, answered in a script's `judge_reply`'s."""

    example = '{"faithful": true, "covered": 3}'

    def complete(self, prompt: str, kind: str, parse: Any = None) -> Reply:
        return render_verdict(Reply.verdict(kind, example=self.example), request(prompt))


def test_a_script_reply_is_the_first_format_tried_and_reported_as_the_scripts(
        monkeypatch: pytest.MonkeyPatch) -> None:
    judge_module(monkeypatch)
    prompt = "Give the grading service's JSON verdict.\n\nResponse: hi"  # no example
    judge = ScriptedJsonJudge()
    positive = judge.complete(prompt, "positive", parse=judge.parse)
    negative = judge.complete(prompt, "negative", parse=judge.parse)
    assert (positive.content, negative.content) == (judge.example,
                                                    '{"faithful": false, "covered": 0}')
    assert positive.unreadable is None and unreadable_judge(0) is None
    assert label_source(request(prompt), positive) == (
        "a JSON object (faithful: bool, covered: int), in the format of the script's "
        f"judge_reply {judge.example!r}")
    unchecked = render_verdict(Reply.verdict("negative", example=judge.example),
                               request(prompt))  # no judge on the stack: still tried first
    assert unchecked.content == '{"faithful": false, "covered": 0}'
