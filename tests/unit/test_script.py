"""The script file: parsing, one-line errors, placeholders, per-task turn selection."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from vfcheck._model import (
    SESSION_ID_HEADER,
    Fault,
    ModelRequest,
    Reply,
    ScriptedModel,
    TaskRef,
)
from vfcheck._model.script import Script, ScriptError

# The example of the issue, verbatim: the last [[task.turn]] belongs to the task (TOML's rule).
EXAMPLE = """\
seed = 0                       # optional: seed of generated defaults

[[task]]
key = "echo-tool:0"            # or: index = 0   (one of them)
[[task.turn]]
tool = "echo_back"             # a tool call; arguments as a TOML table, or `raw_arguments = "{bad json"`
arguments = { message = "hello world" }
[[task.turn]]
reply = "<answer>{last_tool_result}</answer>"   # {last_tool_result} / {last_user} placeholders

[[default.turn]]               # optional: for tasks not listed; else the default policy
reply = "hi"
[[task.turn]]                  # a fault turn looks like:
fault = "status"               # status | malformed | cut | empty | huge | hang
status = 503
"""  # noqa: E501

ECHO_TOOL = {
    "type": "function",
    "function": {
        "name": "echo_back",
        "parameters": {
            "type": "object",
            "properties": {"message": {"type": "string"}},
            "required": ["message"],
        },
    },
}


def request(
    *,
    task: TaskRef | None = None,
    turn: int = 0,
    messages: list[dict[str, Any]] | None = None,
    tools: list[dict[str, Any]] | None = None,
) -> ModelRequest:
    body = {"messages": messages or [{"role": "user", "content": "ping"}], "tools": tools or []}
    return ModelRequest(body=body, task=task, turn=turn)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "script.toml"
    path.write_text(text)
    return path


def load_error(tmp_path: Path, text: str) -> str:
    path = write(tmp_path, text)
    with pytest.raises(ScriptError) as caught:
        Script.load(path)
    message = str(caught.value)
    assert "\n" not in message, message
    assert message.startswith(f"{path}: "), message
    return message


# ------------------------------------------------------------------------------- parsing


def test_the_issue_example_parses_exactly(tmp_path: Path) -> None:
    script = Script.load(write(tmp_path, EXAMPLE))
    assert script.seed == 0
    (task,) = script.task
    assert (task.key, task.index) == ("echo-tool:0", None)
    assert [turn.tool or turn.reply or turn.fault for turn in task.turn] == [
        "echo_back",
        "<answer>{last_tool_result}</answer>",
        Fault.STATUS,
    ]
    assert task.turn[0].arguments == {"message": "hello world"}
    assert task.turn[2].status == 503
    assert script.default is not None and [t.reply for t in script.default.turn] == ["hi"]


def test_the_example_plays_turn_by_turn() -> None:
    policy = Script.from_toml(EXAMPLE).policy()
    echo = TaskRef(index=0, key="echo-tool:0")
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "ping"},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "echo_back", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "hello world"},
    ]
    assert policy(request(task=echo, turn=0)) == Reply.tool("echo_back", {"message": "hello world"})
    assert policy(request(task=echo, turn=1, messages=history)) == Reply.text(
        "<answer>hello world</answer>"
    )
    assert policy(request(task=echo, turn=2)) == Reply.fault("status", status=503)
    # Past the end: the built-in default policy (call the env's tools, then answer).
    assert policy(request(task=echo, turn=3, messages=history)) == Reply.text("hello world")
    fresh = policy(request(task=echo, turn=3, tools=[ECHO_TOOL]))
    assert fresh is not None and fresh.tool_calls[0].name == "echo_back"


def test_unlisted_tasks_play_default_turns_then_the_default_policy() -> None:
    policy = Script.from_toml(EXAMPLE).policy()
    other = TaskRef(index=1, key="echo-tool:1")
    assert policy(request(task=other, turn=0)) == Reply.text("hi")
    assert policy(request(task=None, turn=0)) == Reply.text("hi")
    assert policy(request(task=other, turn=1)) == Reply.text("ping")  # echo


def test_without_default_turns_unlisted_tasks_get_the_default_policy() -> None:
    policy = Script.from_toml('[[task]]\nindex = 2\n[[task.turn]]\nreply = "two"').policy()
    assert policy(request(task=TaskRef(2, "k"), turn=0)) == Reply.text("two")
    assert policy(request(task=TaskRef(3, "k"), turn=0)) == Reply.text("ping")


def test_tasks_match_by_key_before_index() -> None:
    script = Script.from_toml(
        '[[task]]\nindex = 0\n[[task.turn]]\nreply = "by index"\n'
        '[[task]]\nkey = "k"\n[[task.turn]]\nreply = "by key"\n'
    )
    policy = script.policy()
    assert policy(request(task=TaskRef(0, "k"))) == Reply.text("by key")
    assert policy(request(task=TaskRef(0, "x"))) == Reply.text("by index")
    assert policy(request(task=TaskRef(None, "k"))) == Reply.text("by key")


def test_every_turn_kind() -> None:
    script = Script.from_toml(
        """
[[task]]
index = 0
[[task.turn]]
raw_arguments = "{bad json"
tool = "echo_back"
[[task.turn]]
tool = "noop"
[[task.turn]]
fault = "huge"
size = 0
[[task.turn]]
fault = "status"
[[task.turn]]
fault = "hang"
[[task.turn]]
reply = "you said {last_user}; tool said {last_tool_result}"
"""
    )
    policy = script.policy()
    replies = [policy(request(task=TaskRef(0, None), turn=turn)) for turn in range(6)]
    assert replies == [
        Reply.tool("echo_back", "{bad json"),
        Reply.tool("noop", {}),
        Reply.fault("huge", size=0),
        Reply.fault("status", status=500),
        Reply.fault("hang"),
        Reply.text("you said ping; tool said "),
    ]


def test_placeholders_fill_argument_strings_but_not_raw_arguments() -> None:
    script = Script.from_toml(
        """
[[default.turn]]
tool = "echo_back"
arguments = { message = "{last_user}", nested = { list = ["{last_user}!", 3] } }
[[default.turn]]
tool = "echo_back"
raw_arguments = "{last_user}"
"""
    )
    policy = script.policy()
    filled = policy(request(turn=0, messages=[{"role": "user", "content": "hey"}]))
    assert filled is not None
    assert json.loads(filled.tool_calls[0].arguments) == {
        "message": "hey",
        "nested": {"list": ["hey!", 3]},
    }
    raw = policy(request(turn=1))
    assert raw is not None and raw.tool_calls[0].arguments == "{last_user}"


def test_seed_comes_from_the_file_unless_overridden() -> None:
    parameters = {"type": "object", "properties": {"n": {"type": "integer"}}}
    tools = [{"type": "function", "function": {"name": "t", "parameters": parameters}}]
    seeded = Script.from_toml("seed = 7")
    assert seeded.policy()(request(tools=tools)) == seeded.policy(7)(request(tools=tools))
    arguments = {
        json.dumps(seeded.policy(seed)(request(tools=tools)).tool_calls[0].arguments)  # type: ignore[union-attr]
        for seed in range(6)
    }
    assert len(arguments) > 1


async def test_a_scripted_model_answers_the_bound_task() -> None:
    model = ScriptedModel(Script.from_toml(EXAMPLE).policy())
    model.bind("trace-1", TaskRef(0, "echo-tool:0"))
    body = json.dumps({"messages": [{"role": "user", "content": "ping"}]}).encode()
    wires = [
        await model.handle("POST", "/v1/chat/completions", {SESSION_ID_HEADER: "trace-1"}, body)
        for _ in range(3)
    ]
    assert [wire.status for wire in wires] == [200, 200, 503]
    assert [record.reply.tool_calls[0].name for record in model.requests[:1]] == ["echo_back"]


# -------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[[task]]\nkey = [\n", "invalid TOML"),
        (
            '[[task]]\nkey = "a"\n[[task.turn]]\nreply = "x"\nanswer = 1\n',
            "task 1 (key 'a'), turn 1: unknown field `answer` (allowed: reply, tool, arguments,",
        ),
        ("colour = 1\n",
         "top level: unknown field `colour` (allowed: seed, judge, judge_reply, task, default, "
         "http, fallback)"),
        (
            "[[task]]\nindex = 0\n[[task.turn]]\n",
            "task 1 (index 0), turn 1: a turn needs one of `reply`, `tool`, `calls` or `fault`, "
            "got none",
        ),
        (
            '[[task]]\n[[task.turn]]\nreply = "x"\n',
            "task 1: a task needs `index` or `key`, got neither",
        ),
        (
            '[[task]]\nindex = 1\nkey = "k"\n',
            "task 1 (key 'k'): a task takes `index` or `key`, not both",
        ),
        (
            '[[task]]\nkey = "k"\n[[task]]\nkey = "k"\n',
            "top level: task key 'k' is listed twice",
        ),
        (
            # `reply` may go with `tool` (a model's text beside its call), not with a fault
            '[[task]]\nindex = 0\n[[task.turn]]\nreply = "x"\nfault = "cut"\n',
            "a turn is one of `reply`, `tool`, `calls` or `fault` (`reply` may go with `tool` "
            "or `calls`), got reply and fault",
        ),
        (
            '[[task]]\nindex = 0\n[[task.turn]]\nfault = "explode"\n',
            "task 1 (index 0), turn 1, `fault`: Input should be 'status', 'malformed', 'cut', "
            "'empty', 'huge' or 'hang', got 'explode'",
        ),
        (
            '[[default.turn]]\nreply = "x"\nstatus = 503\n',
            'default, turn 1: `status` goes with `fault = "status"`',
        ),
        (
            '[[default.turn]]\nfault = "status"\nstatus = 200\n',
            "`status` must be a 4xx or 5xx code, got 200",
        ),
        (
            '[[default.turn]]\nreply = "x"\narguments = { a = 1 }\n',
            "`arguments` and `raw_arguments` go with `tool`",
        ),
        (
            '[[default.turn]]\ntool = "t"\narguments = {}\nraw_arguments = "{}"\n',
            "give `arguments` or `raw_arguments`, not both",
        ),
        ('seed = "zero"\n', "`seed`: Input should be a valid integer"),
        (
            '[[task]]\nindex = 0\njudge = "maybe"\n',
            "task 1 (index 0), `judge`: Input should be 'positive', 'negative' or 'garbage', "
            "got 'maybe'",
        ),
        (
            '[[task]]\nkey = "k"\njudge = "negative"\njudge_reply = "no"\n',
            "task 1 (key 'k'): give `judge` or `judge_reply`, not both",
        ),
        ('judge = "yes"\n', "script.toml: `judge`: Input should be 'positive', 'negative' or"),
        ("[[task]]\nindex = 0\noracle = 3\n", "task 1 (index 0), `oracle`: Input should be a"),
        ("task = 3\n", "`task`: expected an array of tables ([[...]]), got 3"),
    ],
)
def test_errors_are_one_line_naming_file_and_problem(
    tmp_path: Path, text: str, expected: str
) -> None:
    assert expected in load_error(tmp_path, text)


def test_toml_syntax_error_names_the_line(tmp_path: Path) -> None:
    message = load_error(tmp_path, 'seed = 0\n[[task]]\nkey = "unterminated\n')
    assert "invalid TOML: " in message and "line 3" in message


def test_several_problems_are_counted(tmp_path: Path) -> None:
    message = load_error(tmp_path, "colour = 1\nshade = 2\n")
    assert message.endswith("(and 1 more problem)")


def test_missing_file_is_a_script_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    with pytest.raises(ScriptError, match=r"nope\.toml: cannot read the script: No such file"):
        Script.load(missing)


# ------------------------------------------------------------------------- judge calls

JUDGED = """\
judge = "garbage"              # every judge call not answered below

[[task]]
key = "vfc-judge:ping"
judge = "negative"
oracle = "ping"
[[task.turn]]
reply = "pong"

[[task]]
index = 2
judge_reply = "Yes, mostly."

[[task]]
index = 3
oracle = "three"

[[default.turn]]
reply = "default turn"
"""


def judge_request(task: TaskRef | None) -> ModelRequest:
    body = {"messages": [{"role": "user", "content": "Correct? yes/no"}]}
    return ModelRequest(body=body, task=task, kind="judge")


def test_judge_calls_get_the_scripted_verdict_never_a_turn() -> None:
    script = Script.from_toml(JUDGED)
    policy = script.policy()
    ping = TaskRef(index=1, key="vfc-judge:ping")
    assert policy(judge_request(ping)) == Reply.verdict("negative")
    assert policy(judge_request(TaskRef(index=2, key="k2"))) == Reply.text("Yes, mostly.")
    assert policy(judge_request(TaskRef(index=3, key="k3"))) == Reply.verdict("garbage")
    assert policy(judge_request(None)) == Reply.verdict("garbage")
    assert policy(request(task=ping)) == Reply.text("pong")  # the agent plays its turns


def test_without_judge_keys_judge_calls_get_the_models_default() -> None:
    policy = Script.from_toml('[[task]]\nindex = 0\n[[task.turn]]\nreply = "x"\n').policy()
    assert policy(judge_request(TaskRef(index=0, key="k"))) is None  # -> `positive`


def test_a_top_level_judge_reply_answers_every_judge_call_a_task_does_not() -> None:
    script = Script.from_toml('judge_reply = \'{"ok": true}\'\n[[task]]\nindex = 1\n'
                              'judge = "negative"\n[[task]]\nindex = 2\njudge_reply = "B"\n')
    policy = script.policy()
    assert policy(judge_request(TaskRef(index=0))) == Reply.text('{"ok": true}')
    assert policy(judge_request(None)) == Reply.text('{"ok": true}')  # mock-server serves it
    assert policy(judge_request(TaskRef(index=1))) == Reply.verdict("negative")
    # the raw reply (the judge's format) the checks that play verdicts say them in
    assert [script.judge_reply_for(TaskRef(index=i)) for i in range(3)] == [
        '{"ok": true}', None, "B"]
    assert script.unservable_apart() is not None  # the [[task]] judges, not the top level
    assert Script.from_toml("judge_reply = 'x'\n").unservable_apart() is None
    with pytest.raises(ScriptError, match="give `judge` or `judge_reply`, not both"):
        Script.from_toml('judge = "positive"\njudge_reply = "x"\n')


def test_oracles_are_read_per_task_and_key_first() -> None:
    script = Script.from_toml(JUDGED)
    assert script.oracle_for(TaskRef(index=1, key="vfc-judge:ping")) == "ping"
    assert script.oracle_for(TaskRef(index=3, key="other")) == "three"
    assert script.oracle_for(TaskRef(index=2, key="k2")) is None
    assert script.oracle_for(None) is None
    assert script.judge == "garbage"


def test_a_task_listed_without_turns_plays_the_default_turns() -> None:
    policy = Script.from_toml(JUDGED).policy()
    assert policy(request(task=TaskRef(index=3, key="k3"))) == Reply.text("default turn")


def test_tool_names_include_every_call_of_a_several_call_turn() -> None:
    """A recorded turn of several calls (`[[task.turn.calls]]`, as `vfcheck record` writes)
    names its tools too: a harness built-in among them keeps the role on the env tier."""
    script = Script.from_toml(
        '[[task]]\nindex = 0\n[[task.turn]]\ntool = "calc_add"\narguments = {a = 1, b = 2}\n'
        '[[task.turn]]\n[[task.turn.calls]]\ntool = "bash"\narguments = {command = "ls"}\n'
        '[[task.turn.calls]]\ntool = "edit"\narguments = {path = "x"}\n')
    assert script.tool_names() == {"calc_add", "bash", "edit"}


def test_the_seed_that_plays_is_the_flags_else_the_script_files_else_0(tmp_path: Path) -> None:
    from vfcheck._model.script import seed_that_plays
    from vfcheck._options.resolved import CheckOptions

    script = tmp_path / "s.toml"
    script.write_text("seed = 5\n")
    assert seed_that_plays(None, None) == 0
    assert seed_that_plays(None, script) == 5
    assert seed_that_plays(3, script) == 3
    assert seed_that_plays(0, script) == 0  # a 0 given is a seed given
    (tmp_path / "plain.toml").write_text("[[task]]\nindex = 0\n")
    assert seed_that_plays(None, tmp_path / "plain.toml") == 0
    # the replay line repeats --seed only where the replayed script would not play it
    replay = CheckOptions(script=str(script), seed=5).replay_args(pytest=False)
    assert "--seed" not in replay and "--script" in replay
    assert CheckOptions(script=str(script), seed=0).replay_args(pytest=False)[-2:] == [
        "--seed", "0"]
    assert CheckOptions(seed=7).replay_args(pytest=False) == ["--seed", "7"]
    assert CheckOptions(script=str(script)).played_seed == 5


def test_what_a_mock_server_apart_cannot_serve_is_named() -> None:
    """`vfcheck mock-server` sees no task: a `[[task]]` with turns or a judge, and `[[http]]`,
    would go unserved; an oracle-only entry, `[[default.turn]]` and `judge` are served."""
    assert Script.from_toml(
        'judge = "negative"\n[[task]]\nindex = 0\noracle = "x"\n[[default.turn]]\nreply = "y"\n'
    ).unservable_apart() is None
    why = Script.from_toml(EXAMPLE).unservable_apart()
    assert why is not None and why.startswith(
        "mock-server cannot serve its 1 task entry ([[task]] 1 (key 'echo-tool:0')): ")
    both = Script.from_toml('[[task]]\nindex = 3\njudge_reply = "maybe"\n'
                            '[[http]]\nurl = "https://a.example.org/"\ntext = "ok"\n')
    assert "its 1 task entry ([[task]] 1 (index 3)) and 1 [[http]] entry" in str(
        both.unservable_apart())
