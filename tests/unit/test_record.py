"""`vfcheck record`'s cassettes from trace records made here: turns, scrubbing, misses."""

from __future__ import annotations

import json
from typing import Any

import pytest

from vfcheck._frontends.cassette import (
    ApiKeyMissing,
    RecordedTask,
    api_key_for,
    cassette_text,
    misses,
    recorded_task,
    scrub_turns,
)
from vfcheck._model import SESSION_ID_HEADER, ScriptedModel, TaskRef
from vfcheck._model.script import Script

API_KEY = "hunter2-the-endpoint-key-0123"


TOKEN = "sk-proj-ABCDEFGHIJKLMNOP0123456789"


def trace_record(*messages: dict[str, Any], errors: dict[int, Any] | None = None) -> dict[str, Any]:
    """A `Trace.to_record()`-shaped dump: a user prompt, then one call per reply (a call in
    `errors` failed and has no node)."""
    nodes: list[dict[str, Any]] = [{"message": {"role": "user", "content": "hi"}}]
    calls: list[dict[str, Any]] = []
    for number, message in enumerate(messages):
        if errors and number in errors:
            calls.append({"node": None, "error": errors[number]})
            continue
        nodes.append({"message": {"role": "assistant", **message}, "sampled": True})
        calls.append({"node": len(nodes) - 1, "error": None})
    return {"nodes": nodes, "calls": calls}


def test_a_trace_becomes_turns_in_call_order() -> None:
    record = trace_record(
        {"content": None, "tool_calls": [{"id": "c1", "name": "calc_add",
                                          "arguments": '{"a": 2, "b": 3}'}]},
        {"content": "both", "tool_calls": [{"name": "x", "arguments": "{}"},
                                           {"name": "y", "arguments": "{bad"}]},
        {},
        {"content": "5"},
        errors={2: {"type": "ProviderError", "message": "upstream 503", "status_code": 503}},
    )
    task = recorded_task(0, "k", [record])
    assert task.turns == [
        {"tool": "calc_add", "raw_arguments": '{"a": 2, "b": 3}'},
        {"reply": "both", "calls": [{"tool": "x", "raw_arguments": "{}"},
                                    {"tool": "y", "raw_arguments": "{bad"}]},
        {"fault": "status", "status": 503},
        {"reply": "5"},
    ]
    assert task.notes == ["call 2 failed upstream (status 503): recorded as a status fault, "
                          "which the replay meets too"]


def test_a_call_with_no_reply_ends_the_turns_and_several_agents_are_noted() -> None:
    record = trace_record({"content": "one"})
    record["calls"].append({"node": None, "error": None})
    task = recorded_task(1, "k", [record, trace_record({"content": "other agent"})])
    assert task.turns == [{"reply": "one"}]
    assert any("call 1 has no reply" in note for note in task.notes)
    assert any("2 traces" in note for note in task.notes)


def test_secrets_never_reach_the_cassette() -> None:
    turns = [
        {"reply": f"key {API_KEY} and Authorization: Bearer abc.def-123 and {TOKEN}"},
        {"tool": "login", "raw_arguments": json.dumps({"user": "me", "api_key": "plain-value",
                                                       "note": f"uses {API_KEY}"})},
        {"calls": [{"tool": "t", "raw_arguments": f'{{"password": "pw-1234", "x": "{TOKEN}"}}'}]},
    ]
    scrubbed = scrub_turns(turns, [API_KEY, None, ""])
    text = cassette_text([RecordedTask(0, "k", scrubbed)], env_id="e",
                         base_url="https://user:pass@api.example.com/v1?key=zzz", model="m")
    for secret in (API_KEY, TOKEN, "abc.def-123", "plain-value", "pw-1234", "user:pass", "zzz"):
        assert secret not in text
    assert "<secret>" in text and "api.example.com" in text
    loaded = Script.from_toml(text)
    assert json.loads(loaded.task[0].turn[1].raw_arguments or "")["user"] == "me"


def test_the_api_key_is_needed_for_a_remote_endpoint_only() -> None:
    with pytest.raises(ApiKeyMissing, match=r"^\$MY_KEY is not set: .*--api-key-var"):
        api_key_for("MY_KEY", "https://api.example.com/v1", environ={})
    assert api_key_for("MY_KEY", "http://127.0.0.1:8000/v1", environ={}) is None
    assert api_key_for("MY_KEY", "http://localhost:8000/v1", environ={"MY_KEY": "v"}) == "v"


async def ask(model: ScriptedModel, session: str, user: str = "hi") -> dict[str, Any]:
    body = json.dumps({"messages": [{"role": "user", "content": user}]}).encode()
    wire = await model.handle("POST", "/v1/chat/completions", {SESSION_ID_HEADER: session}, body)
    assert isinstance(wire.body, bytes)
    return {"status": wire.status, "body": json.loads(wire.body)}


async def test_a_cassette_gives_the_recorded_turns_back_and_a_miss_names_task_and_turn() -> None:
    turns = [{"reply": "text with {braces} kept"},
             {"reply": "adding", "tool": "calc_add", "raw_arguments": '{"a": 1}'}]
    text = cassette_text([RecordedTask(0, "task-a", turns)], env_id="e",
                         base_url="http://127.0.0.1:1/v1", model="m")
    model = ScriptedModel(Script.from_toml(text).policy())
    model.bind("s-a", TaskRef(0, "task-a"))
    model.bind("s-b", TaskRef(1, "task-b"))
    first, second, third = [await ask(model, "s-a") for _ in range(3)]
    assert first["body"]["choices"][0]["message"]["content"] == "text with {braces} kept"
    message = second["body"]["choices"][0]["message"]
    assert message["content"] == "adding"
    assert [(c["function"]["name"], c["function"]["arguments"]) for c in message["tool_calls"]] \
        == [("calc_add", '{"a": 1}')]
    assert third["status"] == 404
    unlisted = await ask(model, "s-b")
    assert unlisted["status"] == 404
    assert misses(model.requests) == [
        "the script holds no turn 2 of task 'task-a' (index 0) (it holds 2 turns of it): "
        'record it again (vfcheck record), or set fallback = "default" in the script',
        "the script holds no turn 0 of task 'task-b' (index 1) (it holds no turns of it): "
        'record it again (vfcheck record), or set fallback = "default" in the script',
    ]


async def test_fallback_default_lets_the_default_policy_answer_a_miss() -> None:
    text = cassette_text([RecordedTask(0, "task-a", [{"reply": "recorded"}])], env_id="e",
                         base_url="http://127.0.0.1:1/v1", model="m")
    text = text.replace('fallback = "error"', 'fallback = "default"')
    model = ScriptedModel(Script.from_toml(text).policy())
    model.bind("s-a", TaskRef(0, "task-a"))
    replies = [(await ask(model, "s-a", "echo me"))["body"] for _ in range(2)]
    assert [r["choices"][0]["message"]["content"] for r in replies] == ["recorded", "echo me"]
    assert misses(model.requests) == []
