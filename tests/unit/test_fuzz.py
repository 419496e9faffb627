"""Property-based tests (hypothesis) of the scripted model's bytes and the normaliser that need
neither verifiers nor a process (verifiers' own parsers: tests/integration/test_fuzz.py)."""

from __future__ import annotations

import asyncio
import copy
import json
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from vfcheck._model import (
    SESSION_ID_HEADER,
    ModelRequest,
    Reply,
    ScriptedModel,
    ToolCall,
)
from vfcheck._traces.normalize import RULES, normalize_trace, scrub, trace_diff

WIRE_EXAMPLES = 60
"""Replies per wire test: each one goes through 5 readers (streamed and plain)."""


RULE_EXAMPLES = 150
"""JSON trees per scrubbing-rule idempotence test (cheap: pure functions)."""


SCRUB_EXAMPLES = 150
"""JSON trees for the whole-pipeline idempotence test."""


RECORD_EXAMPLES = 80
"""Generated trace records per normalise/diff property."""


SESSION = "trace-fuzz"


USER: list[dict[str, Any]] = [{"role": "user", "content": "say hello"}]


CHAT_PATH = "/v1/chat/completions"


TRICKY_FRAGMENTS = (
    "", " ", "\t", "\n", "\n\n", "\r", "\r\n", "\r\n\r\n", "\r\r", "data:", "data: ",
    "data: [DONE]\n\n", "[DONE]", 'data: {"choices": []}\n\n', ": keepalive\n\n",
    "event: error\n", "id: 7\n", "retry: 1\n", "\u2028", "\u2029", "\x85", "\x00", "\x1c",
    '"', "\\", "\\n", "{", "}", "😀", "\ufeff", "é", "\U0010ffff", "</s>",
)


def _repeat(unit: str, times: int) -> str:
    return unit * times


TEXT = st.one_of(
    st.text(),
    st.lists(st.sampled_from(TRICKY_FRAGMENTS) | st.text(max_size=4), max_size=12).map(
        "".join
    ),
    # very long: several hundred stream deltas of up to ~170 characters each
    st.builds(_repeat, st.text(min_size=1, max_size=8), st.integers(500, 5_000)),
)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


ARGUMENTS = st.one_of(
    TEXT,  # mostly invalid JSON
    st.dictionaries(st.text(), JSON_VALUES, max_size=4).map(
        lambda d: json.dumps(d, ensure_ascii=False, separators=(",", ":"))
    ),
    st.sampled_from(["{}", "{bad json", '{"a": ', "null", "[]", '"str"', "{}}"]),
)


TOOL_NAMES = st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_]{0,30}", fullmatch=True)


TOOL_CALLS = st.builds(
    ToolCall,
    name=TOOL_NAMES,
    arguments=ARGUMENTS,
    id=st.none() | st.text(min_size=1, max_size=40),
)


REPLIES = (
    st.tuples(st.none() | TEXT, st.lists(TOOL_CALLS, max_size=4).map(tuple))
    .filter(lambda pair: pair[0] is not None or bool(pair[1]))
    .map(lambda pair: Reply(content=pair[0], tool_calls=pair[1]))
)


@settings(max_examples=WIRE_EXAMPLES, deadline=None)
@given(reply=REPLIES, stream=st.booleans())
def test_same_request_same_bytes_for_any_reply(reply: Reply, stream: bool) -> None:
    """WIRE_EXAMPLES (60) replies, streamed or plain, answered twice by fresh models through
    `ScriptedModel.handle` (no verifiers): the bytes are identical, every SSE event is one
    `data:` line of JSON with no raw CR/LF inside, and a plain body is one JSON object."""
    body = json.dumps({"messages": USER, "stream": stream}).encode()

    async def answer() -> bytes | list[bytes]:
        response = await ScriptedModel(lambda request: reply).handle(
            "POST", CHAT_PATH, {SESSION_ID_HEADER: SESSION}, body
        )
        if isinstance(response.body, bytes):
            return response.body
        return [event async for event in response.body]

    first, second = asyncio.run(answer()), asyncio.run(answer())
    assert first == second
    if isinstance(first, bytes):
        assert json.loads(first)["choices"][0]["finish_reason"] == reply.finish_reason
        return
    for event in first:
        line = event.removeprefix(b"data: ").removesuffix(b"\n\n")
        assert b"\n" not in line and b"\r" not in line
        if line != b"[DONE]":
            assert isinstance(json.loads(line), dict)


def test_model_request_of_fuzz_body_is_a_plain_chat_request() -> None:
    """Sanity for the fixture above: the body the wire tests send is a chat request."""
    request = ModelRequest(body={"model": "m", "messages": USER, "stream": True})
    assert (request.model, request.stream, request.last_user_text) == ("m", True, "say hello")


KEYS = st.sampled_from(
    ["id", "tool_call_id", "call_id", "trace_id", "session_id", "port", "start", "end", "t",
     "duration", "timestamp", "timing", "time", "notify", "task", "api_key", "authorization",
     "token", "verifiers", "version", "commit", "content", "data", "messages", "x"]
) | st.text(max_size=6)


STRING_FRAGMENTS = st.sampled_from(
    ["/tmp", "/tmp/", "/var/tmp/", "tmp", "tmpab12_xyz", "/tmp/tmpab12_xyz", "pytest-of-root/",
     "pytest-3", "127.0.0.1:", "localhost:8000", "[::1]:", "0.0.0.0:", "Bearer ", "Basic ",
     "sk-", "sk-proj-abcdefghijklmnopqrstuv", "verifiers/0.4.0", "verifiers==", "call_",
     "chatcmpl-", "4b84962538244a1290e5036256beeb12", "123e4567-e89b-12d3-a456-426614174000",
     "<tmp>", "<id:1>", "<secret>", "<port>", "<time>", "<version>", "12345", "abc-123-def",
     "/", " ", ":", "-", "_", "a", "0", "f"]
)


STRINGS = st.text(max_size=12) | st.lists(STRING_FRAGMENTS, max_size=8).map("".join)


LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | STRINGS
)


TREES = st.recursive(
    LEAVES,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=5),
    max_leaves=25,
)


# Regression examples: both once broke idempotence (a second pass scrubbed the first pass's
# own output: `<tmp>/tmp<random>`, and a 32-hex run glued to a known id).
TEMP_EXAMPLE = {"path": "/tmp/tmpab12_xyz/out.txt"}


IDS_EXAMPLE = {"id": "zzzzzzz1", "s": "zzzzzzz1" + "0123456789abcdef" * 2}


RANDOM_SEGMENT_EXAMPLE = "/tmp/tmp:/tmpchatcmpl-"
"""Found by fuzzing: the random-segment rule made `/tmpchatcmpl` `/tmp<random>`, whose
`/tmp` the next pass took for a temp root."""


SECRET_AFTER_ID_EXAMPLE = "4b84962538244a1290e5036256beeb12sk-proj-abcdefghijklmnopqrstuv"


TEMP_BEFORE_ID_EXAMPLE = "/tmp4b84962538244a1290e5036256beeb12"
"""Found by fuzzing: a key or a temp root glued to a uuid hex matched only once the hex had
become `<id:1>` (a later rule's placeholder made the word boundary an earlier rule needs)."""


def _rule_params() -> list[Any]:
    return [pytest.param(r, id=r.name) for r in RULES]


@pytest.mark.parametrize("rule", _rule_params())
@settings(max_examples=RULE_EXAMPLES, deadline=None)
@given(tree=TREES)
@example(tree=TEMP_EXAMPLE)
@example(tree=IDS_EXAMPLE)
@example(tree=RANDOM_SEGMENT_EXAMPLE)
def test_each_rule_is_idempotent(rule: Any, tree: Any) -> None:
    """RULE_EXAMPLES (150) JSON trees per rule (+3 explicit regressions): applying a rule
    twice equals applying it once, and the input is left unchanged."""
    before = copy.deepcopy(tree)
    once = rule.apply(tree)
    assert tree == before
    assert rule.apply(once) == once


@settings(max_examples=SCRUB_EXAMPLES, deadline=None)
@given(tree=TREES)
@example(tree=TEMP_EXAMPLE)
@example(tree=SECRET_AFTER_ID_EXAMPLE)
@example(tree=TEMP_BEFORE_ID_EXAMPLE)
def test_scrub_is_idempotent(tree: Any) -> None:
    """SCRUB_EXAMPLES (150) JSON trees (+1 explicit regression): `scrub(scrub(x)) == scrub(x)`."""
    once = scrub(tree)
    assert scrub(once) == once


@settings(max_examples=SCRUB_EXAMPLES, deadline=None)
@given(tree=TREES)
def test_scrub_output_is_json_and_diff_of_equal_trees_is_empty(tree: Any) -> None:
    """SCRUB_EXAMPLES (150) JSON trees: the scrubbed tree is strict JSON (round-trips, no
    NaN), and `trace_diff(x, x)` / `trace_diff(x, deepcopy(x))` are []."""
    scrubbed = scrub(tree)
    assert json.loads(json.dumps(scrubbed, allow_nan=False)) == scrubbed
    assert trace_diff(tree, tree) == []
    assert trace_diff(scrubbed, copy.deepcopy(scrubbed)) == []


@dataclass(frozen=True)
class Volatile:
    """Everything that legitimately differs between two plays of one task."""

    trace_id: str
    call_id: str
    job_uuid: str
    port: int
    times: tuple[float, ...]


def _hex_ids(count: int) -> st.SearchStrategy[list[str]]:
    return st.lists(st.uuids(version=4).map(lambda u: u.hex), min_size=count, max_size=count,
                    unique=True)


VOLATILES = st.builds(
    lambda ids, job, port, times: Volatile(ids[0], f"call_{ids[1][:24]}", str(job), port,
                                           tuple(times)),
    _hex_ids(2),
    st.uuids(),
    st.integers(1, 65535),
    st.lists(st.floats(1e-3, 4e9), min_size=16, max_size=16),
)


CONTENTS = st.text(max_size=40) | st.lists(STRING_FRAGMENTS, max_size=6).map("".join)


def build_record(v: Volatile, user: str = "add 2 and 3") -> dict[str, Any]:
    """A `Trace.to_record()` of a one-tool-call episode (the shape of tests/unit/test_normalize.py's
    sample), with every volatile value taken from `v`."""
    t = v.times
    message = {"role": "assistant", "content": None, "reasoning_content": None,
               "provider_state": None}
    return {
        "version": 1,
        "id": v.trace_id,
        "verifiers": {"version": "0.4.0", "commit": "abc1234"},
        "task": {
            "type": "CalcTask",
            "data": {"idx": 0, "id": "add-2-3", "prompt": user, "image": None, "skills": [],
                     "timeout": {"setup": None}, "a": 2},
            "key": "calc:2+3",
            "hash": "95d61e5293b9fcefcee98fd5e71c3a1ced6d5c033c97300878016badff91976e",
        },
        "agent": {
            "config": {"harness": {"id": "bash"}, "client": {"api_key_var": "OPENAI_API_KEY"}},
            "runtime": {"id": f"/tmp/runtimes/subprocess/{v.trace_id}", "type": "subprocess"},
            "name": "agent",
        },
        "tools": [{"type": "function", "name": "add", "namespace": "calc", "parameters": {}}],
        "nodes": [
            {"parent": None, "message": {"role": "user", "content": user},
             "sampled": False, "timestamp": t[0], "token_ids": [1, 2]},
            {"parent": 0, "sampled": True, "timestamp": t[1], "logprobs": [-0.1],
             "message": {**message, "tool_calls": [
                 {"id": v.call_id, "type": "function", "name": "add", "namespace": "calc",
                  "arguments": '{"a":2,"b":3}'}]}},
            {"parent": 1, "timestamp": t[2],
             "message": {"role": "tool", "tool_call_id": v.call_id, "name": "add",
                         "content": f"5 (job {v.job_uuid}, trace {v.trace_id})"}},
            {"parent": 2, "sampled": True, "timestamp": t[3],
             "message": {**message, "content": "5", "tool_calls": None}},
        ],
        "calls": [
            {"node": 1, "model": "m", "finish_reason": "tool_calls", "usage": {"prompt_tokens": 9},
             "time": {"start": t[4], "end": t[5]}, "error": None},
            {"node": 3, "model": "m", "finish_reason": "stop", "usage": {"prompt_tokens": 12},
             "time": {"start": t[6], "end": t[7]},
             "error": {"type": "ProviderError", "status_code": 500, "traceback": "x",
                       "message": f"upstream 500 from 127.0.0.1:{v.port}/v1"}},
        ],
        "rewards": {"summed": {"score": 1.0, "weight": 1.0}},
        "metrics": {"tool_calls": 1.0},
        "info": {"server": f"http://localhost:{v.port}/v1", "session_id": v.trace_id},
        "root_reply": None,
        "is_completed": True,
        "ok": True,
        "stop_condition": "agent_completed",
        "is_timeout": False,
        "errors": [],
        "timing": {
            "start": t[8],
            "boot": {"start": t[9], "end": t[10]},
            "agent": {"start": t[11], "end": t[12],
                      "model": {"duration": t[13]}, "harness": {"duration": t[14]}},
            "finalize": {"start": 0.0, "end": 0.0},
        },
        "num_total_tokens": 21,
    }


def notify_log(v: Volatile) -> list[dict[str, Any]]:
    return [{"label": "boot.start", "t": v.times[15], "pending": 0},
            {"label": "scoring.end", "t": v.times[0]}]


@settings(max_examples=RECORD_EXAMPLES, deadline=None)
@given(a=VOLATILES, b=VOLATILES, user=CONTENTS)
def test_records_differing_only_in_volatile_values_normalise_equal(
    a: Volatile, b: Volatile, user: str
) -> None:
    """RECORD_EXAMPLES (80) pairs of records of one episode that differ only in trace id,
    tool-call id, a uuid in a tool result, loopback port, node timestamps, call times,
    stage times, durations and notify times: they normalise equal, `trace_diff` is [], the
    result is strict JSON, and none of the volatile values survives in it."""
    # distinct ids, so that "equal" cannot come from a shared one
    assume(not {a.trace_id, a.call_id, a.job_uuid} & {b.trace_id, b.call_id, b.job_uuid})
    first = normalize_trace(build_record(a, user), notify_log(a))
    second = normalize_trace(build_record(b, user), notify_log(b))
    assert trace_diff(first, second) == []
    assert first == second
    text = json.dumps(first, allow_nan=False)
    assert json.loads(text) == first
    for v in (a, b):
        for value in (v.trace_id, v.call_id, v.job_uuid, f":{v.port}/"):
            assert value not in text


@settings(max_examples=RECORD_EXAMPLES, deadline=None)
@given(v=VOLATILES, user=CONTENTS)
def test_normalize_trace_is_a_fixed_point_of_scrub_and_leaves_the_record(
    v: Volatile, user: str
) -> None:
    """RECORD_EXAMPLES (80) records (any user text, incl. path/id/port lookalikes):
    normalising does not change the record, and scrubbing a normalised trace again changes
    nothing."""
    record = build_record(v, user)
    before = copy.deepcopy(record)
    normalized = normalize_trace(record, notify_log(v))
    assert record == before
    assert scrub(normalized) == normalized


MESSAGE_INDEXES = st.integers(0, 3)


@settings(max_examples=RECORD_EXAMPLES, deadline=None)
@given(v=VOLATILES, index=MESSAGE_INDEXES, new=st.none() | CONTENTS)
def test_a_changed_message_content_is_named_by_the_diff(
    v: Volatile, index: int, new: str | None
) -> None:
    """RECORD_EXAMPLES (80) records with one message's content changed (any text or None):
    the normalised traces differ, and `trace_diff` has a `messages[i].content` line."""
    old = build_record(v)
    changed = build_record(v)
    message = changed["nodes"][index]["message"]
    if new == message["content"]:
        new = (new or "") + "!"
    message["content"] = new
    a, b = normalize_trace(old), normalize_trace(changed)
    assert a != b
    lines = trace_diff(a, b)
    assert any(line.startswith(f"messages[{index}].content: ") for line in lines), lines
    assert trace_diff(b, a) != []


@settings(max_examples=RECORD_EXAMPLES, deadline=None)
@given(
    v=VOLATILES,
    score=st.floats(allow_nan=False) | st.integers() | st.none(),
    key=st.sampled_from(["summed", "extra"]),
)
def test_a_changed_reward_is_named_by_the_diff(
    v: Volatile, score: float | int | None, key: str
) -> None:
    """RECORD_EXAMPLES (80) records with a reward score changed (or a reward added): the
    normalised traces differ and `trace_diff` names `rewards.<name>...`."""
    old = build_record(v)
    changed = build_record(v)
    current = changed["rewards"].get(key, {}).get("score")
    if score == current and type(score) is type(current):
        score = 0.5
    changed["rewards"].setdefault(key, {"weight": 1.0})["score"] = score
    lines = trace_diff(normalize_trace(old), normalize_trace(changed))
    assert lines
    assert any(line.startswith(f"rewards.{key}") for line in lines), lines
    assert all(line.startswith("rewards.") for line in lines), lines
