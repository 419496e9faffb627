"""Trace normalisation: each scrubbing rule, the view and the diff, on records made here."""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path
from typing import Any

from vfcheck._traces.normalize import RULES, normalize_trace, scrub, trace_diff, trace_view

TRACE_ID = "4b84962538244a1290e5036256beeb12"


CALL_ID = "call_5a9fedcfc98280e176cebaac"


def rule(name: str) -> Any:
    (found,) = [r for r in RULES if r.name == name]
    return found.apply


def record() -> dict[str, Any]:
    """A `Trace.to_record()` of a one-tool-call episode, trimmed to the fields that matter."""
    message = {"role": "assistant", "content": None, "reasoning_content": None,
               "provider_state": None}
    return {
        "version": 1,
        "id": TRACE_ID,
        "verifiers": {"version": "0.4.0", "commit": "abc1234"},
        "task": {
            "type": "CalcTask",
            "data": {"idx": 0, "id": "add-2-3", "prompt": "add 2 and 3", "image": None,
                     "skills": [], "timeout": {"setup": None}, "a": 2},
            "key": "calc:2+3",
            "hash": "95d61e5293b9fcefcee98fd5e71c3a1ced6d5c033c97300878016badff91976e",
        },
        "agent": {
            "config": {"harness": {"id": "bash"}, "client": {"api_key_var": "OPENAI_API_KEY"}},
            "runtime": {"id": f"/tmp/runtimes/subprocess/{TRACE_ID}", "type": "subprocess"},
            "name": "agent",
        },
        "tools": [{"type": "function", "name": "add", "namespace": "calc", "parameters": {}}],
        "nodes": [
            {"parent": None, "message": {"role": "user", "content": "add 2 and 3"},
             "sampled": False, "timestamp": 1796042448.17, "token_ids": [1, 2]},
            {"parent": 0, "sampled": True, "timestamp": 1796042448.18, "logprobs": [-0.1],
             "message": {**message, "tool_calls": [
                 {"id": CALL_ID, "type": "function", "name": "add", "namespace": "calc",
                  "arguments": '{"a":2,"b":3}'}]}},
            {"parent": 1, "timestamp": 1796042448.19,
             "message": {"role": "tool", "tool_call_id": CALL_ID, "content": "5", "name": "add"}},
            {"parent": 2, "sampled": True, "timestamp": 1796042448.2,
             "message": {**message, "content": "5", "tool_calls": None}},
        ],
        "calls": [
            {"node": 1, "model": "m", "finish_reason": "tool_calls", "usage": {"prompt_tokens": 9},
             "time": {"start": 1796042448.1, "end": 1796042448.2}, "error": None},
            {"node": 3, "model": "m", "finish_reason": "stop", "usage": {"prompt_tokens": 12},
             "time": {"start": 1796042448.3, "end": 1796042448.4}, "error": None},
        ],
        "rewards": {"summed": {"score": 1.0, "weight": 1.0}},
        "metrics": {"tool_calls": 1.0},
        "info": {},
        "root_reply": None,
        "is_completed": True,
        "ok": True,
        "stop_condition": "agent_completed",
        "is_timeout": False,
        "errors": [],
        "timing": {
            "start": 1796042447.8,
            "boot": {"start": 1796042447.9, "end": 1796042447.91},
            "agent": {"start": 1796042447.92, "end": 1796042448.5,
                      "model": {"duration": 0.2}, "harness": {"duration": 0.38}},
            "finalize": {"start": 0.0, "end": 0.0},
        },
        "num_total_tokens": 21,
    }


def test_secrets_are_hidden_by_key_and_by_shape() -> None:
    tree = {
        "headers": {"Authorization": "Bearer abc.DEF-123", "x-api-key": "k-1"},
        "client": {"api_key_var": "OPENAI_API_KEY", "api_key": "hunter2"},
        "log": "sent Bearer tok_9f8e7d with sk-proj-abcdefghijklmnopqrstuv",
        "task": {"data": {"secret": "the puzzle's own answer"}},
    }
    assert rule("secrets")(tree) == {
        "headers": {"Authorization": "<secret>", "x-api-key": "<secret>"},
        "client": {"api_key_var": "OPENAI_API_KEY", "api_key": "<secret>"},
        "log": "sent Bearer <secret> with <secret>",
        "task": {"data": {"secret": "the puzzle's own answer"}},
    }


def test_versions_are_placeholders() -> None:
    tree = {"verifiers": {"version": "0.4.0", "commit": None}, "ua": "verifiers/0.4.0rc1 x",
            "task": {"version": "2"}}
    assert rule("versions")(tree) == {
        "verifiers": {"version": "<version>", "commit": None},
        "ua": "verifiers/<version> x",
        "task": {"version": "2"},
    }


def test_temp_and_verifiers_cache_paths_become_tmp() -> None:
    temp = tempfile.gettempdir()
    cache = Path.home() / ".cache" / "verifiers"
    tree = [
        f"{temp}/tmpab12_xyz/out.txt",
        "/tmp/pytest-of-root/pytest-12/test_a0/run.json",
        f"{cache}/runtimes/subprocess/x",
        "/home/someone/.cache/verifiers/locks/l",
        "http://host/tmp/keep and /tmpfile",
    ]
    assert rule("temp-paths")(tree) == [
        "<tmp>/tmp<random>/out.txt",
        "<tmp>/pytest-of-<user>/pytest-<n>/test_a0/run.json",
        "<tmp>/runtimes/subprocess/x",
        "<tmp>/locks/l",
        "http://host/tmp/keep and /tmpfile",
    ]


def test_loopback_ports_are_placeholders() -> None:
    tree = {"url": "http://127.0.0.1:43123/v1 and localhost:8000", "port": 5555,
            "remote": "example.com:443", "ports": [1]}
    assert rule("ports")(tree) == {
        "url": "http://127.0.0.1:<port>/v1 and localhost:<port>",
        "port": "<port>",
        "remote": "example.com:443",
        "ports": [1],
    }


def test_times_under_timing_time_and_notify_are_placeholders_but_zero_stays() -> None:
    tree = {
        "timing": {"start": 1.5, "boot": {"start": 2.0, "end": 0.0}},
        "calls": [{"time": {"start": 3.0, "end": 4.0}}],
        "notify": [{"t": 5.0, "pending": 2}],
        "nodes": [{"timestamp": 6.0}],
        "data": {"start": 7, "end": 8.0, "t": 9.0},
    }
    assert rule("times")(tree) == {
        "timing": {"start": "<time>", "boot": {"start": "<time>", "end": 0.0}},
        "calls": [{"time": {"start": "<time>", "end": "<time>"}}],
        "notify": [{"t": "<time>", "pending": 2}],
        "nodes": [{"timestamp": "<time>"}],
        "data": {"start": 7, "end": 8.0, "t": 9.0},
    }


def test_ids_are_numbered_by_first_appearance_everywhere_they_occur() -> None:
    other = "0f" * 16
    tree = {
        "id": TRACE_ID,
        "messages": [
            {"tool_calls": [{"id": "abc-123-def"}]},
            {"tool_call_id": "abc-123-def", "content": f"trace {TRACE_ID}, peer {other}"},
        ],
        "path": f"<tmp>/runtimes/{TRACE_ID}",
        "agent": {"harness": {"id": "vfcheck-chat"}},
        "task": {"data": {"id": "task-00042"}},
        "note": "see chatcmpl-a1b2c3d4e5f6a7b8c9 and 123e4567-e89b-12d3-a456-426614174000",
    }
    assert rule("ids")(tree) == {
        "id": "<id:1>",
        "messages": [
            {"tool_calls": [{"id": "<id:2>"}]},
            {"tool_call_id": "<id:2>", "content": "trace <id:1>, peer <id:3>"},
        ],
        "path": "<tmp>/runtimes/<id:1>",
        "agent": {"harness": {"id": "vfcheck-chat"}},
        "task": {"data": {"id": "task-00042"}},
        "note": "see <id:4> and <id:5>",
    }


def test_scrub_applies_every_rule_and_leaves_its_input_alone() -> None:
    raw = record()
    before = copy.deepcopy(raw)
    scrubbed = scrub(raw)
    assert raw == before
    assert scrubbed["id"] == "<id:1>"
    assert scrubbed["verifiers"]["version"] == "<version>"
    assert scrubbed["agent"]["runtime"]["id"] == "<tmp>/runtimes/subprocess/<id:1>"
    assert scrubbed["nodes"][1]["message"]["tool_calls"][0]["id"] == "<id:2>"
    assert scrubbed["calls"][0]["time"] == {"start": "<time>", "end": "<time>"}
    assert scrubbed["task"]["hash"] == raw["task"]["hash"]  # content hashes are kept
    assert [r.name for r in RULES] == ["secrets", "versions", "temp-paths", "ports", "times",
                                       "ids"]
    assert all(r.description for r in RULES)


def test_normalized_trace_keeps_what_the_env_decides() -> None:
    notify = [{"label": "boot.start", "t": 1.0, "pending": 0}, {"label": "scoring.end", "t": 2.0}]
    view = normalize_trace(record(), notify)
    assert list(view) == [
        "id", "task", "agent", "tools", "messages", "calls", "stop_condition", "is_completed",
        "is_timeout", "ok", "rewards", "metrics", "info", "root_reply", "errors", "timing",
        "notify",
    ]
    assert view["task"] == {"type": "CalcTask", "key": "calc:2+3",
                            "data": {"idx": 0, "id": "add-2-3", "prompt": "add 2 and 3", "a": 2}}
    assert view["agent"] == {"name": "agent", "harness": "bash"}
    assert view["tools"] == ["calc.add"]
    assert view["messages"] == [
        {"role": "user", "content": "add 2 and 3"},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "<id:2>", "name": "calc.add", "arguments": '{"a":2,"b":3}'}]},
        {"role": "tool", "content": "5", "tool_call_id": "<id:2>", "name": "add"},
        {"role": "assistant", "content": "5"},
    ]
    assert view["calls"][0] == {"node": 1, "finish_reason": "tool_calls", "error": None}
    assert view["rewards"] == {"summed": {"score": 1.0, "weight": 1.0}}
    assert view["timing"] == {"boot": {"start": "<time>", "end": "<time>"},
                              "agent": {"start": "<time>", "end": "<time>"},
                              "finalize": {"start": 0.0, "end": 0.0}}
    assert view["notify"] == ["boot.start", "scoring.end"]
    assert "notify" not in normalize_trace(record())


def test_errors_keep_type_message_and_status_but_not_the_traceback() -> None:
    raw = record()
    error = {"type": "ProviderError", "message": "upstream 500 from 127.0.0.1:40001",
             "status_code": 500, "traceback": 'File "/usr/lib/x.py", line 1'}
    raw["errors"] = [error]
    raw["calls"][0]["error"] = error
    view = normalize_trace(raw)
    expected = {"type": "ProviderError", "message": "upstream 500 from 127.0.0.1:<port>",
                "status_code": 500}
    assert view["errors"] == [expected]
    assert view["calls"][0]["error"] == expected


def test_a_branching_node_names_its_parent() -> None:
    raw = record()
    raw["nodes"][3]["parent"] = 1
    messages = trace_view(raw)["messages"]
    assert [m.get("parent", "-") for m in messages] == ["-", "-", "-", 1]


def test_the_view_shares_nothing_with_the_record() -> None:
    raw = record()
    view = trace_view(raw)
    view["task"]["data"]["prompt"] = "changed"
    assert raw["task"]["data"]["prompt"] == "add 2 and 3"


def test_equal_traces_have_no_diff() -> None:
    assert trace_diff(normalize_trace(record()), normalize_trace(record())) == []


def test_a_changed_prompt_and_reward_show_as_paths() -> None:
    old, raw = normalize_trace(record()), record()
    raw["task"]["data"]["prompt"] = raw["nodes"][0]["message"]["content"] = "add 2 and 4"
    raw["rewards"]["summed"]["score"] = 0.0
    assert trace_diff(old, normalize_trace(raw)) == [
        'task.data.prompt: "add 2 and 3" -> "add 2 and 4"',
        'messages[0].content: "add 2 and 3" -> "add 2 and 4"',
        "rewards.summed.score: 1.0 -> 0.0",
    ]


def test_an_inserted_message_is_one_line_not_a_shift() -> None:
    old = {"messages": [{"c": "a"}, {"c": "b"}, {"c": "c"}]}
    new = {"messages": [{"c": "a"}, {"c": "x"}, {"c": "b"}, {"c": "c"}]}
    assert trace_diff(old, new) == ['messages[1]: (absent) -> {"c": "x"}']
    assert trace_diff(new, old) == ['messages[1]: {"c": "x"} -> (absent)']


def test_added_removed_and_retyped_keys() -> None:
    old = {"a": 1, "b": {"odd key": True}, "c": 1}
    new = {"a": 1.0, "b": {}, "d": [1]}
    assert trace_diff(old, new) == [
        "a: 1 -> 1.0",
        'b["odd key"]: true -> (absent)',
        "c: 1 -> (absent)",
        "d: (absent) -> [1]",
    ]


def test_long_strings_are_shortened_around_the_first_difference() -> None:
    old = {"m": "x" * 200 + "needle" + "y" * 200}
    new = {"m": "x" * 200 + "nEEdle" + "y" * 200}
    (line,) = trace_diff(old, new)
    # the window opens 20 characters before the first difference ("n" matches)
    assert line.startswith('m: …"' + "x" * 19 + "needle" + "y" * 35 + '"… -> …"')
    assert "nEEdle" in line and len(line) < 160


def test_temp_paths_rule_renames_every_random_segment_in_one_application() -> None:
    """Found by hypothesis (tests/unit/test_fuzz.py): the greedy path prefix let one pass rename
    only the last of two random segments, so the rule was not idempotent."""
    from vfcheck._traces.normalize import RULES

    rule = next(r for r in RULES if r.name == "temp-paths")
    once = rule.apply("/tmp/tmpab12_xyz/tmp/tmpab12_xyz")
    assert once == "<tmp>/tmp<random>/tmp/tmp<random>"
    assert rule.apply(once) == once
