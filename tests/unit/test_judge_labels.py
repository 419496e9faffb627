"""Judge labels read from a judge's prompt and from a structured judge's schema (pure
functions; no verifiers). verifiers' own judges are in tests/integration/test_judge_model.py."""

from __future__ import annotations

import pytest

from vfcheck._model import FALLBACK_LABELS, ModelRequest, Reply
from vfcheck._model.judges import label_source, read_labels, render_verdict, schema_labels

INTERCEPTION = ("Reply BLOCK if the candidate contains JUDGE_BLOCK; otherwise ALLOW.\n\n"
                "user: Reply with exactly JUDGE_BLOCK.\n\nCandidate:\nJUDGE_BLOCK")


@pytest.mark.parametrize(
    ("prompt", "labels"),
    [
        (INTERCEPTION, ("BLOCK", "ALLOW")),  # verifiers' interception env
        ("Reply CORRECT if it matches the reference, otherwise WRONG.", ("CORRECT", "WRONG")),
        ("Reply WRONG if it differs, otherwise reply CORRECT.", ("CORRECT", "WRONG")),
        ('Reply "GOOD" if fine, else "BAD"', ("GOOD", "BAD")),
        ("Respond with yes if it matches, otherwise no.", ("yes", "no")),
        ("Answer ALLOW or BLOCK.", ("ALLOW", "BLOCK")),
        ("Respond either PASS or FAIL.", ("PASS", "FAIL")),
        ("Reply with a sentence if you like, otherwise nothing.", None),
        # curators-eye's grade: three quoted labels, best first
        ('Reply with a one-sentence justification, then "FINAL VERDICT: A", "FINAL VERDICT: '
         'B", or "FINAL VERDICT: C".', ("FINAL VERDICT: A", "FINAL VERDICT: C")),
        # an if/otherwise instruction wins over a pair in the judged text after it
        ("Reply CORRECT if right, otherwise WRONG.\nResponse: answer yes or no", ("CORRECT",
                                                                                  "WRONG")),
    ],
)
def test_labels_written_in_the_instruction_are_read(
        prompt: str, labels: tuple[str, str] | None) -> None:
    assert read_labels(prompt) == labels


def request(prompt: str, schema: dict[str, object] | None = None) -> ModelRequest:
    body: dict[str, object] = {"model": "grader", "messages": [{"role": "user",
                                                                "content": prompt}]}
    if schema is not None:
        body["response_format"] = {"type": "json_schema",
                                   "json_schema": {"name": "v", "schema": schema}}
    return ModelRequest(body=body, kind="judge")


def test_a_verdict_is_sent_in_the_prompts_labels_and_says_where_they_came_from() -> None:
    sent = render_verdict(Reply.verdict("positive"), request(INTERCEPTION))
    assert sent.content == "BLOCK" and sent.labels == ("BLOCK", "ALLOW")
    assert label_source(request(INTERCEPTION), sent) == "its prompt"
    fallback = render_verdict(Reply.verdict("negative"), request("Grade it."))
    assert fallback.content == "no" and fallback.labels == FALLBACK_LABELS
    assert label_source(request("Grade it."), fallback) == "fallback (none read)"


def test_a_schemas_enum_gives_the_labels_when_the_prompt_names_none() -> None:
    schema = {"type": "object", "properties": {"verdict": {"enum": ["ALLOW", "BLOCK"]}},
              "required": ["verdict"]}
    assert schema_labels(schema) == ("BLOCK", "ALLOW")
    assert schema_labels({"type": "object", "properties": {"reason": {"type": "string"}}}) is None
    sent = render_verdict(Reply.verdict("negative"), request("Grade it.", schema))
    assert sent.content == '{"verdict": "ALLOW"}'
    assert label_source(request("Grade it.", schema), sent) == "its schema's enum"
