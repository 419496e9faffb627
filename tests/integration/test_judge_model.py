"""The scripted model as a judge: real verifiers judges, called in-process under the mock.

Each judge here is verifiers' own (`vf.Judge` subclasses, `ReferenceJudge`, `RubricJudge`),
building its own openai client over httpx as env code does while scoring; only the
endpoint is the scripted model (`ScriptedModel.mock`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import openai
import pytest
import verifiers.v1 as vf
from pydantic import BaseModel, Field
from verifiers.v1.judges.reference import ReferenceJudge, ReferenceJudgeConfig
from verifiers.v1.judges.rubric import RubricJudge, RubricJudgeConfig
from verifiers.v1.utils.score import parse_judge_choice

from vfcheck._episodes.runner import run_episodes
from vfcheck._model import (
    DEFAULT_BASE_URL,
    FALLBACK_LABELS,
    SESSION_ID_HEADER,
    EpisodeRef,
    PolicyRouter,
    Reply,
    ScriptedModel,
    TaskRef,
    Verdict,
    episode_scope,
    first_of,
    fixed,
    judge_policy,
)
from vfcheck._model.judges import garbage_text, read_labels, rubric_criteria
from vfcheck._model.script import Script

KEY_VAR = "VFCHECK_TEST_JUDGE_KEY"
"""Unset on purpose: verifiers sends "EMPTY" (and reads no Prime config for this var)."""
TASK = TaskRef(index=1, key="vfc-judge:ping")
YES_NO_PROMPT = "Question: {question}\nAnswer: {answer}\nResponse: {response}\nCorrect? yes/no"


def judge_config(**fields: Any) -> vf.JudgeConfig:
    return vf.JudgeConfig(base_url=DEFAULT_BASE_URL, api_key_var=KEY_VAR, model="judge", **fields)


class LenientJudge(vf.Judge[bool]):
    """verifiers' docstring judge: anything but a leading "yes" is False."""

    prompt = YES_NO_PROMPT

    def parse(self, response: vf.JudgeResponse[bool]) -> bool:
        return response.text.strip().lower().startswith("yes")


class StrictJudge(LenientJudge):
    """The well-behaved one: a verdict it cannot read raises."""

    def parse(self, response: vf.JudgeResponse[bool]) -> bool:
        text = response.text.strip().lower()
        if text.startswith(("yes", "no")):
            return text.startswith("yes")
        raise ValueError(f"no yes/no verdict: {response.text!r}")


class Grade(BaseModel):
    reason: str
    verdict: Literal["incorrect", "partially correct", "correct"]
    confidence: float = Field(ge=0.0, le=1.0)
    passed: bool


class GradeJudge(vf.Judge[Grade]):
    prompt = "Response: {response}\nGrade it: correct or incorrect."
    schema = Grade


class AnswerData(vf.TaskData):
    answer: str


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    """A default scripted model, mocked in-process for the test."""
    scripted = ScriptedModel()
    with scripted.mock():
        yield scripted


def scope() -> EpisodeRef:
    return EpisodeRef(task=TASK, trace_ids=["trace-a", "trace-b"])


def answered_trace(data: AnswerData, reply: str) -> vf.Trace:
    """A trace of `data`'s prompt answered by `reply`, as a judge reads it."""
    trace = vf.Trace(
        task=vf.TraceTask(type="AnswerTask", data=data, key="k", hash="h"),
        agent=vf.AgentInfo(config=vf.AgentConfig(), name="test", trainable=False),
    )
    for i, message in enumerate([vf.UserMessage(content=data.prompt_text),
                                 vf.AssistantMessage(content=reply)]):
        trace.nodes.append(vf.MessageNode(message=message, parent=i - 1 if i else None,
                                          sampled=isinstance(message, vf.AssistantMessage)))
    return trace


async def ask(judge: vf.Judge[Any]) -> Any:
    result = await judge.evaluate(question="Say ping.", answer="ping", response="ping")
    return result.parsed


# --------------------------------------------------------------------- verdicts, labels


@pytest.mark.parametrize(
    ("verdict", "expected"), [("positive", True), ("negative", False), ("garbage", False)]
)
async def test_a_yes_no_judge_reads_each_verdict(verdict: str, expected: bool) -> None:
    model = ScriptedModel(judge_policy(verdict))
    with model.mock(), episode_scope(scope()) as ref:
        assert await ask(LenientJudge(judge_config())) is expected
    (call,) = model.judge_calls
    assert call.request.kind == "judge" and call.request.episode is ref
    assert call.request.task == TASK and call.request.session_id is None
    assert not call.request.stream
    assert call.reply.verdict_kind == Verdict(verdict) and call.reply.labels == ("yes", "no")
    sent = {"positive": "yes", "negative": "no", "garbage": "I cannot decide."}
    assert call.reply.content == sent[verdict]


async def test_a_strict_parser_raises_on_garbage() -> None:
    with ScriptedModel(judge_policy("garbage")).mock(), episode_scope(scope()):
        with pytest.raises(ValueError, match=r"no yes/no verdict: 'I cannot decide\.'"):
            await ask(StrictJudge(judge_config()))


async def test_default_verdict_is_positive_and_never_an_echo(model: ScriptedModel) -> None:
    with episode_scope(scope()):
        assert await ask(LenientJudge(judge_config())) is True
    (call,) = model.requests
    assert call.reply.content == "yes"
    assert "Correct? yes/no" not in (call.reply.content or "")


async def test_a_fixed_raw_text_still_answers_a_judge() -> None:
    with ScriptedModel(judge_policy(Reply.text("YES, clearly"))).mock():
        assert await ask(LenientJudge(judge_config())) is True


@pytest.mark.parametrize(
    ("choices", "verdict", "score"),
    [(("yes", "no"), "positive", 1.0), (("A", "B"), "positive", 1.0),
     (("A", "B"), "negative", 0.0), (("correct", "incorrect"), "negative", 0.0)],
)
async def test_reference_judge_gets_the_labels_of_its_prompt(
    choices: tuple[str, str], verdict: str, score: float
) -> None:
    model = ScriptedModel(judge_policy(verdict))
    data = AnswerData(prompt="What is the capital of France?", answer="Paris")
    judge = ReferenceJudge(ReferenceJudgeConfig(
        base_url=DEFAULT_BASE_URL, api_key_var=KEY_VAR, model="judge", choices=choices))
    with model.mock(), episode_scope(scope()):
        assert await judge.score(data, answered_trace(data, "Paris")) == score
    (call,) = model.judge_calls
    assert call.reply.labels == choices  # read from `Respond either "X" or "Y" only.`


async def test_reference_judge_raises_on_garbage() -> None:
    data = AnswerData(prompt="What is the capital of France?", answer="Paris")
    judge = ReferenceJudge(ReferenceJudgeConfig(
        base_url=DEFAULT_BASE_URL, api_key_var=KEY_VAR, model="judge", choices=("A", "B")))
    with ScriptedModel(judge_policy("garbage")).mock(), episode_scope(scope()):
        with pytest.raises(ValueError, match="judge returned no A/B verdict"):
            await judge.score(data, answered_trace(data, "Paris"))


async def test_labels_given_by_the_caller_win() -> None:
    model = ScriptedModel(judge_policy("negative", labels=("GOOD", "BAD")))
    with model.mock():
        await ask(LenientJudge(judge_config()))
    assert model.judge_calls[0].reply.content == "BAD"


@pytest.mark.parametrize(
    ("prompt", "labels"),
    [
        ('Respond either "A" or "B" only.', ("A", "B")),
        ("Is it right? Answer 'incorrect' or 'correct'.", ("correct", "incorrect")),
        ("Correct? yes/no", ("yes", "no")),
        ("Reply with PASS or FAIL.", ("PASS", "FAIL")),
        ("Say true/false.", ("true", "false")),
        ("- style: terse (answer one of, worst to best: poor, fair, great)", ("great", "poor")),
        ("Earlier text: yes/no.\nFinal instruction: answer A or B.", ("A", "B")),
        ("Rate the response.", None),
        ("choose a or b", None),  # letters count in capitals only: "a" is an article
    ],
)
def test_labels_are_read_from_the_prompt(prompt: str, labels: tuple[str, str] | None) -> None:
    assert read_labels(prompt) == labels


@pytest.mark.parametrize(
    "labels", [("yes", "no"), ("A", "B"), ("correct", "incorrect"), ("pass", "fail"),
               ("true", "false"), ("I", "II")],
)
def test_garbage_matches_no_label_for_verifiers(labels: tuple[str, str]) -> None:
    assert parse_judge_choice(garbage_text(labels), labels) is None


def test_unreadable_labels_fall_back_to_yes_no() -> None:
    assert FALLBACK_LABELS == ("yes", "no")
    assert read_labels("Grade the response from 1 to 10.") is None


# ------------------------------------------------------------------ structured output


@pytest.mark.parametrize(
    ("verdict", "expected"),
    [("positive", ("correct", 1.0, True)), ("negative", ("incorrect", 0.0, False))],
)
async def test_a_schema_judge_gets_a_valid_object(
    verdict: str, expected: tuple[str, float, bool]
) -> None:
    model = ScriptedModel(judge_policy(verdict))
    with model.mock(), episode_scope(scope()):
        grade = await GradeJudge(judge_config()).evaluate(response="ping")
    assert isinstance(grade.parsed, Grade)
    assert (grade.parsed.verdict, grade.parsed.confidence, grade.parsed.passed) == expected
    (call,) = model.judge_calls
    assert call.request.response_schema is not None  # sent as `response_format`


async def test_a_schema_judge_rejects_garbage() -> None:
    with ScriptedModel(judge_policy("garbage")).mock():
        with pytest.raises(Exception, match="validation error"):
            await GradeJudge(judge_config()).evaluate(response="ping")


async def test_non_streamed_replies_are_chat_completions(model: ScriptedModel) -> None:
    async with openai.AsyncOpenAI(base_url=DEFAULT_BASE_URL, api_key="x", max_retries=0) as api:
        completion = await api.chat.completions.create(
            model="judge", messages=[{"role": "user", "content": "Correct? yes/no"}])
    assert completion.object == "chat.completion"
    assert completion.choices[0].message.content == "yes"
    assert completion.choices[0].finish_reason == "stop" and completion.usage is not None


@pytest.mark.parametrize("structured", [False, True])
@pytest.mark.parametrize(("verdict", "score"), [("positive", 1.0), ("negative", 0.0)])
async def test_a_rubric_judge_gets_every_criterion(
    tmp_path: Path, structured: bool, verdict: str, score: float
) -> None:
    rubric = tmp_path / "rubric.toml"
    rubric.write_text(
        '[[criteria]]\nname = "terse"\ntext = "is short"\n'
        '[[criteria]]\nname = "style"\ntext = "reads well"\nchoices = ["poor", "fair", "great"]\n'
    )
    judge = RubricJudge(RubricJudgeConfig(base_url=DEFAULT_BASE_URL, api_key_var=KEY_VAR,
                                          path=rubric, structured_output=structured))
    data = AnswerData(prompt="Say ping.", answer="ping")
    with ScriptedModel(judge_policy(verdict)).mock(), episode_scope(scope()):
        assert await judge.score(data, answered_trace(data, "ping")) == score
    assert rubric_criteria("- style: reads well (answer one of, worst to best: poor, fair, great)"
                           ) == [("style", ["poor", "fair", "great"])]


# ------------------------------------------------------------ attribution and routing


async def test_agent_turns_are_unaffected(model: ScriptedModel) -> None:
    model.bind("trace-a", TASK)
    headers = {SESSION_ID_HEADER: "trace-a"}
    async with openai.AsyncOpenAI(base_url=DEFAULT_BASE_URL, api_key="x", max_retries=0,
                                  default_headers=headers) as api:
        with episode_scope(scope()):
            completion = await api.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "Correct? yes/no"}])
    assert completion.choices[0].message.content == "Correct? yes/no"  # the agent echo
    (call,) = model.requests
    assert call.request.kind == "agent" and call.request.task == TASK
    assert call.request.episode is None  # bound without a play: no episode
    assert model.judge_calls == []


async def test_concurrent_scopes_attribute_their_own_judge_calls(model: ScriptedModel) -> None:
    refs = [EpisodeRef(task=TaskRef(index=i, key=f"k{i}")) for i in range(3)]

    async def play(ref: EpisodeRef) -> None:
        with episode_scope(ref):
            await asyncio.sleep(0)
            # a task created inside the scope copies it, as `run_slot`'s tasks do
            await asyncio.ensure_future(ask(LenientJudge(judge_config())))

    await asyncio.gather(*(play(ref) for ref in refs))
    by_ref = {id(call.request.episode): call.request.task for call in model.judge_calls}
    assert by_ref == {id(ref): ref.task for ref in refs}
    assert all(call.request.turn == 0 for call in model.judge_calls)  # counted per episode


async def test_router_applies_an_episodes_policy_to_its_judge_calls() -> None:
    router = PolicyRouter(base=fixed("base"))
    router.assigned["trace-b"] = first_of(judge_policy("negative"), fixed("agent"))
    model = ScriptedModel(router)
    with model.mock():
        with episode_scope(scope()):
            assert await ask(LenientJudge(judge_config())) is False
        with episode_scope(EpisodeRef(task=TASK, trace_ids=["trace-z"])):
            assert await ask(LenientJudge(judge_config())) is False  # "base"
    assert [c.reply.content for c in model.judge_calls] == ["no", "base"]


def test_a_verdict_reply_needs_a_known_kind_and_two_labels() -> None:
    with pytest.raises(ValueError):
        Reply.verdict("maybe")
    with pytest.raises(ValueError, match="distinct"):
        Reply.verdict("positive", labels=("yes", "YES"))
    with pytest.raises(ValueError, match="verdict or a fault"):
        Reply(verdict_kind=Verdict.POSITIVE, fault_kind=Reply.fault("empty").fault_kind)


# ------------------------------------------------------------------- a judge env, end to end


@pytest.mark.parametrize(("script", "reward"), [("", 1.0), ('judge = "negative"', 0.0)])
async def test_a_judge_env_scores_by_the_verdict(
    fixtures_dir: Path, script: str, reward: float
) -> None:
    model = ScriptedModel(Script.from_toml(script).policy())
    summary = await run_episodes("vfc-judge", model=model, paths=[str(fixtures_dir)])
    assert [t.tier for t in summary.tiers] == ["fast"]
    assert [(r.errors(), r.reward) for r in summary.results] == [([], reward)] * 3
    calls = model.judge_calls
    assert len(calls) == 3  # every judge call reached the mock: none went to the network
    for result in summary.results:
        (call,) = [c for c in calls if c.request.episode is result.scope]
        assert call.request.task == TaskRef(index=result.task.index, key=result.task.key)
        assert result.scope is not None and result.scope.trace_ids == [
            t.id for t in result.traces]
        (recorded,) = result.traces[0].info["judge_calls"]
        assert recorded["response"]["message"]["content"] == ("yes" if reward else "no")
        assert recorded["response"]["parsed"] is bool(reward)


async def test_garbage_errors_a_strict_judge_env_and_scores_a_lenient_one_zero(
    fixtures_dir: Path,
) -> None:
    garbage = Script.from_toml('judge = "garbage"').policy()
    strict = await run_episodes("vfc-judge", model=ScriptedModel(garbage), num_tasks=1,
                                paths=[str(fixtures_dir)])
    lenient = await run_episodes("vfc-judge-lenient", model=ScriptedModel(garbage),
                                 num_tasks=1, paths=[str(fixtures_dir)])
    (errored,) = strict.results
    assert any("no yes/no verdict: 'I cannot decide.'" in e for e in errored.errors())
    (scored,) = lenient.results
    assert scored.errors() == [] and scored.reward == 0.0



# ------------------------------------------------- formats the judge's own parser reads


class JsonVerdictJudge(vf.Judge[dict[str, Any]]):
    """The public `summarize` env's judge shape: a JSON object or a raise."""

    prompt = ("Reply with one JSON object and nothing else, in the form "
              '{"faithful": true, "covered": 2}\ncovered counts the points covered, 0-3.\n'
              "Response: {response}\nfaithful: answer yes or no inside the object.")

    def parse(self, response: vf.JudgeResponse[dict[str, Any]]) -> dict[str, Any]:
        import json
        try:
            value = json.loads(response.text)
        except ValueError:
            raise ValueError(f"judge returned no JSON object: {response.text!r}") from None
        return dict(value)


class PrivateProtocolJudge(vf.Judge[bool]):
    """A judge whose format is private to its parser: nothing in the prompt says it."""

    prompt = "Assess the response.\nResponse: {response}"

    def parse(self, response: vf.JudgeResponse[bool]) -> bool:
        if response.text not in ("VERDICT::ACCEPT", "VERDICT::DENY"):
            raise ValueError(f"no protocol verdict: {response.text!r}")
        return response.text == "VERDICT::ACCEPT"


@pytest.mark.parametrize(("verdict", "expected"), [
    ("positive", {"faithful": True, "covered": 3}),
    ("negative", {"faithful": False, "covered": 0}),
])
async def test_a_judge_is_answered_in_the_format_its_own_parse_reads(
        verdict: str, expected: dict[str, Any]) -> None:
    """The prompt also names yes/no labels, tried after its JSON example: verifiers' real
    `Judge.complete` runs the judge's parse on what the mock sent, and it reads it."""
    model = ScriptedModel(judge_policy(verdict))
    with model.mock(), episode_scope(scope()):
        assert await ask(JsonVerdictJudge(judge_config())) == expected
    (call,) = model.judge_calls
    assert call.reply.unreadable is None
    assert (call.reply.verdict_format or "").startswith("a JSON object (faithful: bool, ")


async def test_a_judge_whose_parse_reads_no_format_tried_is_marked_unreadable() -> None:
    model = ScriptedModel(judge_policy("positive"))
    with model.mock(), episode_scope(scope()), pytest.raises(ValueError, match="protocol"):
        await ask(PrivateProtocolJudge(judge_config()))
    (call,) = model.judge_calls
    assert call.reply.content != "yes" and call.reply.labels is None
    why = call.reply.unreadable or ""
    assert "PrivateProtocolJudge (tests/integration/test_judge_model.py:" in why
    assert "('Assess the response.')" in why and "labels yes/no" in why
