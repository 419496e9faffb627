"""The `fuzz` family's replies and verdicts, without a process: the strategies write in the
task's format (and bend it), a `raise` of the env's own is a refusal and not a crash, a
non-finite reward is a crash, and the replay script plays exactly the shrunk reply."""

from __future__ import annotations

import json
import math
import tomllib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vfcheck.checks._answer_formats import BARE, AnswerFormat
from vfcheck.checks._fuzz_replies import (
    BENDS,
    DrawnReply,
    bent,
    bent_arguments,
    json_text,
    quoted,
    replies,
    tool_call_replies,
)
from vfcheck.checks._probe_results import ProbeResult
from vfcheck.checks._reply_search import replay_script
from vfcheck.checks.fuzz import broke, refusal, site_of

BOXED = AnswerFormat("boxed")
TAGS = AnswerFormat("tags", ("answer",))
CITY = AnswerFormat("json", ("city",))
CRASH = ("TaskError: task T scoring: ValueError: could not convert string to float: '' "
         "(in reward 'boxed_value' at env.py:42: `return float(found[-1])`)")
REFUSAL = ("TaskError: task T scoring: ValueError: the reply did not end with the JSON contract"
           " (in reward 'counted' at env.py:37: `raise ValueError(\"the reply did not end "
           "with the JSON contract\")`)")


def result(*errors: str, **rewards: float | None) -> ProbeResult:
    return ProbeResult("fuzz#0", "r", "positive", None, rewards=dict(rewards),
                       errors=list(errors))


@settings(max_examples=80, database=None)
@given(replies(BOXED, "51"))
def test_boxed_replies_carry_a_box(reply: str) -> None:
    assert "\\boxed{" in reply


@settings(max_examples=80, database=None)
@given(replies(TAGS, None))
def test_tagged_replies_open_the_tag(reply: str) -> None:
    assert "<answer>" in reply


def test_json_replies_reach_the_shapes_a_careless_parser_trips_on() -> None:
    seen: set[str] = set()

    @settings(max_examples=300, database=None, derandomize=True)
    @given(replies(CITY, "Paris"))
    def note(reply: str) -> None:
        try:
            value = json.loads(reply)
        except ValueError:
            return
        if isinstance(value, dict):
            seen.add("no city" if "city" not in value else type(value["city"]).__name__)
        else:
            seen.add(type(value).__name__)

    note()
    assert {"no city", "NoneType", "list"} <= seen, seen


@pytest.mark.parametrize(("how", "expected"), [
    ("as is", "\\boxed{1,000}"), ("twice", "\\boxed{1,000}\n\\boxed{1,0001}"),
    ("nested", "\\boxed{\\boxed{1,000}}"), ("unclosed", "\\boxed{1,000"),
])
def test_the_format_is_bent_around_the_content(how: str, expected: str) -> None:
    assert how in BENDS
    assert bent(BOXED, "1,000", how) == expected


def test_an_unclosed_tag_loses_its_closing_tag() -> None:
    assert bent(TAGS, "42", "unclosed") == "<answer>42"
    assert bent(BARE, "42", "unclosed") == "4"


def test_json_text_writes_nan_as_python_does_and_bends() -> None:
    assert json_text({"city": math.nan}, "as is") == '{"city": NaN}'
    assert json_text({}, "unclosed") == "{"


def test_a_crash_in_env_code_breaks_and_a_raise_of_its_own_refuses() -> None:
    assert broke(result(CRASH)) == f"env code raised {CRASH}"
    assert broke(result(REFUSAL)) is None and refusal(result(REFUSAL))
    assert not refusal(result(CRASH, REFUSAL))


def test_a_non_finite_reward_breaks_and_an_unscored_one_does_not() -> None:
    assert broke(result(city=math.nan)) == "reward city=nan is not finite"
    assert broke(result(city=None)) is None
    assert broke(result("RuntimeError: the harness failed")) is None


def test_a_reply_is_quoted_as_written_unless_a_line_cannot_show_it() -> None:
    assert quoted("\\boxed{}") == "'\\boxed{}'"
    assert quoted("a\nb") == "'a\\nb'"


@pytest.mark.parametrize("reply", ["\\boxed{}", '{"city": null}', "a\nb 'q' \"d\""])
def test_the_replay_script_plays_exactly_the_reply(reply: str) -> None:
    script = tomllib.loads(replay_script(1, DrawnReply(reply)))
    assert script == {"task": [{"index": 1, "turn": [{"reply": reply}]}]}


@given(st.text(max_size=30))
@settings(max_examples=60, database=None)
def test_any_reply_round_trips_through_the_replay_script(reply: str) -> None:
    script = tomllib.loads(replay_script(0, DrawnReply(reply)))
    assert script["task"][0]["turn"][0]["reply"] == reply


VALID = {"a": 2, "b": 3}


@pytest.mark.parametrize(("how", "key", "value", "expected"), [
    ("missing", 1, "x", {"a": 2}), ("null", 0, "x", {"a": None, "b": 3}),
    ("wrong type", 0, "x", {"a": "x", "b": 3}), ("wrong type", 1, 7, {"a": 2, "b": "x"}),
    ("extra", 0, [], {"a": 2, "b": 3, "unexpected": []}), ("empty", 0, "x", {}),
    ("huge", 0, "x", {"a": 10**30, "b": 3}),
])
def test_tool_arguments_are_bent_off_their_schema(how: str, key: int, value: object,
                                                  expected: dict[str, object]) -> None:
    assert json.loads(bent_arguments(VALID, how, key, value)) == expected


def test_arguments_that_are_no_object_and_huge_strings() -> None:
    assert not isinstance(json.loads(bent_arguments(VALID, "not an object", 0, "x")), dict)
    assert json.loads(bent_arguments({"m": "hi"}, "huge", 0, 1))["m"] == "x" * 10_000


@settings(max_examples=60, database=None)
@given(tool_call_replies({"calc_add": VALID}, replies(BOXED, "5")))
def test_a_tool_call_reply_calls_an_offered_tool_off_its_schema(reply: DrawnReply) -> None:
    assert reply.tool == "calc_add" and reply.arguments is not None
    assert reply.arguments != json.dumps(VALID)
    assert reply.describe().startswith("calc_add(")


def test_the_replay_script_plays_the_tool_call_then_the_reply() -> None:
    reply = DrawnReply("{last_tool_result}", "calc_add", '{"a": null}')
    script = tomllib.loads(replay_script(0, reply))
    assert script["task"][0]["turn"] == [
        {"tool": "calc_add", "raw_arguments": '{"a": null}'}, {"reply": "{last_tool_result}"}]


def test_a_crash_is_told_by_where_it_was_raised() -> None:
    assert site_of(f"env code raised {CRASH}") == "env.py:42"
    openenv = ("EnvError: OpenEnvEnv.run(): ModuleNotFoundError: No module named 'openenv' (in "
               "env code (run) at verifiers/v1/tasksets/openenv/taskset.py:75: `from openenv "
               "import GenericEnvClient`)")
    assert site_of(openenv) == "verifiers/v1/tasksets/openenv/taskset.py:75"
    assert site_of("RuntimeError: the harness failed") is None
