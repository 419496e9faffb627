"""The script file: what a person writes to tell the scripted model how to answer each task.

Both front ends read it, and `vfcheck record` writes one (a cassette). It is TOML: per task
(by `index` or `key`) a list of turns, each a reply, tool calls or a fault; `[[default.turn]]`
for the tasks not listed; the judge's verdict per task or for all; `[[http]]` answers for env
code's own requests; `fallback = "error"` to refuse what it holds no turn for (vcrpy's
record mode `none`). The format, field by field: docs/scripts.md.

Turn N is the session's Nth model request (a retry after a fault is the next turn), so a
script replays the same bytes for the same conversation. A listed task plays its turns,
then the built-in default policy; `[[task.turn]]` always adds to the last `[[task]]` above
it, even past a `[[default.turn]]` (TOML's rule). Judge calls never play turns. A broken
script is one error naming the file, the task, the turn and the problem.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import ErrorDetails

from vfcheck._model import (
    HUGE_REPLY_CHARS,
    Fault,
    ModelRequest,
    Policy,
    Reply,
    TaskRef,
    ToolCall,
    Verdict,
    default_reply,
    tool_policy,
)
from vfcheck._model.offline_http import HttpAnswer, http_answer

__all__ = [
    "SCRIPT_MISS",
    "Script",
    "ScriptCall",
    "ScriptError",
    "ScriptHttp",
    "ScriptTask",
    "ScriptTurn",
    "ScriptTurns",
]

SCRIPT_MISS = "the script holds no turn"
"""How the message of a `fallback = "error"` miss starts (`vfcheck._frontends.cassette.misses`)."""

PLACEHOLDERS = ("{last_tool_result}", "{last_user}")


class ScriptError(Exception):
    """A script file that cannot be used; `str()` is one line naming the file and the problem."""


class ScriptCall(BaseModel):
    """One tool call of a `[[task.turn.calls]]` list (a turn of several calls)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool: str
    arguments: dict[str, Any] | None = None
    raw_arguments: str | None = None

    @model_validator(mode="after")
    def _one_argument_form(self) -> ScriptCall:
        if self.arguments is not None and self.raw_arguments is not None:
            raise ValueError("give `arguments` or `raw_arguments`, not both")
        return self

    def call_for(self, request: ModelRequest) -> ToolCall:
        """The call, string arguments filled in from `request` (never `raw_arguments`)."""
        return _tool_call(self.tool, self.arguments, self.raw_arguments, request)


class ScriptTurn(BaseModel):
    """One scripted model turn: a text reply, tool calls (with or without text), or a fault."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    reply: str | None = None
    tool: str | None = None
    arguments: dict[str, Any] | None = None
    raw_arguments: str | None = None
    calls: list[ScriptCall] | None = None
    fault: Fault | None = None
    status: int | None = None
    size: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _one_action(self) -> ScriptTurn:
        actions = [name for name in ("reply", "tool", "calls", "fault")
                   if getattr(self, name) is not None]
        if not actions:
            raise ValueError("a turn needs one of `reply`, `tool`, `calls` or `fault`, got none")
        if len(actions) > 1 and actions not in (["reply", "tool"], ["reply", "calls"]):
            raise ValueError(
                f"a turn is one of `reply`, `tool`, `calls` or `fault` (`reply` may go with "
                f"`tool` or `calls`), got {' and '.join(actions)}"
            )
        if self.calls is not None and not self.calls:
            raise ValueError("`calls` needs at least one call")
        if self.tool is None and (self.arguments is not None or self.raw_arguments is not None):
            raise ValueError("`arguments` and `raw_arguments` go with `tool`")
        if self.arguments is not None and self.raw_arguments is not None:
            raise ValueError("give `arguments` or `raw_arguments`, not both")
        if self.status is not None:
            if self.fault is not Fault.STATUS:
                raise ValueError('`status` goes with `fault = "status"`')
            if not 400 <= self.status <= 599:
                raise ValueError(f"`status` must be a 4xx or 5xx code, got {self.status}")
        if self.size is not None and self.fault is not Fault.HUGE:
            raise ValueError('`size` goes with `fault = "huge"`')
        return self

    def reply_for(self, request: ModelRequest) -> Reply:
        """This turn's reply to `request`, placeholders filled in from its messages."""
        if self.fault is not None:
            return Reply.fault(
                self.fault,
                status=500 if self.status is None else self.status,
                size=HUGE_REPLY_CHARS if self.size is None else self.size,
            )
        content = None if self.reply is None else _fill(self.reply, request)
        if self.tool is not None:
            call = _tool_call(self.tool, self.arguments, self.raw_arguments, request)
            return Reply(content=content, tool_calls=(call,))
        if self.calls is not None:
            return Reply(content=content,
                         tool_calls=tuple(call.call_for(request) for call in self.calls))
        assert content is not None  # the validator guarantees one action
        return Reply.text(content)


class ScriptTurns(BaseModel):
    """The `[default]` table: turns for every task the script does not list."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    turn: list[ScriptTurn] = Field(default_factory=list)


class ScriptTask(BaseModel):
    """One `[[task]]`: the task it scripts (by index or key), its turns, how its judge calls
    are answered, and its reference reply (`oracle`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    index: int | None = Field(default=None, ge=0)
    key: str | None = None
    turn: list[ScriptTurn] = Field(default_factory=list)
    judge: Verdict | None = None
    judge_reply: str | None = None
    oracle: str | None = None

    @model_validator(mode="after")
    def _one_selector(self) -> ScriptTask:
        if self.index is None and self.key is None:
            raise ValueError("a task needs `index` or `key`, got neither")
        if self.index is not None and self.key is not None:
            raise ValueError("a task takes `index` or `key`, not both")
        if self.judge is not None and self.judge_reply is not None:
            raise ValueError("give `judge` or `judge_reply`, not both")
        return self

    def judge_answer(self) -> Reply | None:
        """This task's reply to its judge calls, if the script says."""
        if self.judge_reply is not None:
            return Reply.text(self.judge_reply)
        return Reply.verdict(self.judge) if self.judge is not None else None


class ScriptHttp(BaseModel):
    """One `[[http]]`: the response to env code's own requests for `url` (a remote grader, a
    rubric service), so an env that needs one can be checked offline."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    url: str
    method: str | None = None
    status: int = Field(default=200, ge=100, le=599)
    json_body: Any = Field(default=None, alias="json")
    text: str | None = None

    @model_validator(mode="after")
    def _one_body(self) -> ScriptHttp:
        if not self.url.startswith(("http://", "https://")) or "://" == self.url[-3:]:
            raise ValueError(f"`url` must be an http:// or https:// URL, got {self.url!r}")
        if self.method is not None and not self.method.isalpha():
            raise ValueError(f"`method` must be an HTTP method such as POST, got "
                             f"{self.method!r}")
        if self.text is not None and self.json_body is not None:
            raise ValueError("an http entry takes `json` or `text`, not both")
        return self

    def answer(self) -> HttpAnswer:
        return http_answer(self.url, method=self.method, status=self.status,
                           json_body=self.json_body, text=self.text)


class Script(BaseModel):
    """A parsed script file; `policy()` turns it into the scripted model's policy."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    seed: int = 0
    judge: Verdict | None = None
    """The verdict of judge calls no listed task answers; None: the model's default."""
    judge_reply: str | None = None
    """The raw reply to judge calls no listed task answers (the judge's own format)."""
    task: list[ScriptTask] = Field(default_factory=list)
    default: ScriptTurns | None = None
    http: list[ScriptHttp] = Field(default_factory=list)
    fallback: Literal["default", "error"] = "default"
    """Who answers a request the script holds no turn for: the default policy, or a 404
    naming the task and the turn (a cassette's strict replay)."""

    @model_validator(mode="after")
    def _tasks_listed_once(self) -> Script:
        if self.judge is not None and self.judge_reply is not None:
            raise ValueError("give `judge` or `judge_reply`, not both")
        seen: set[tuple[str, int | str]] = set()
        for task in self.task:
            selector = ("key", task.key) if task.key is not None else ("index", task.index or 0)
            if selector in seen:
                raise ValueError(f"task {selector[0]} {selector[1]!r} is listed twice")
            seen.add(selector)
        return self

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Script:
        """Read and validate a script file; any problem is a one-line `ScriptError`."""
        source = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            reason = error.strerror if isinstance(error, OSError) else str(error)
            raise ScriptError(f"{source}: cannot read the script: {reason}") from None
        return cls.from_toml(text, source=source)

    @classmethod
    def from_toml(cls, text: str, *, source: str = "<script>") -> Script:
        """Parse script text; `source` names it in error messages."""
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise ScriptError(f"{source}: invalid TOML: {_one_line(str(error))}") from None
        try:
            return cls.model_validate(data)
        except ValidationError as error:
            raise ScriptError(f"{source}: {_describe(error, data)}") from None

    def listed(self, task: TaskRef | None) -> ScriptTask | None:
        """The `[[task]]` of `task`, matched by key first, then by index."""
        if task is None:
            return None
        for listed in self.task:
            if listed.key is not None and listed.key == task.key:
                return listed
        for listed in self.task:
            if listed.index is not None and listed.index == task.index:
                return listed
        return None

    def unmatched(self, tasks: Sequence[TaskRef]) -> list[str]:
        """The `[[task]]` entries no task of `tasks` matches, as a person reads the file:
        `[[task]] 2 (key 'nope')` (tables count from 1)."""
        keys = {task.key for task in tasks}
        indices = {task.index for task in tasks}
        return [
            f"[[task]] {n} ({'key' if entry.key is not None else 'index'} "
            f"{entry.key if entry.key is not None else entry.index!r})"
            for n, entry in enumerate(self.task, 1)
            if (entry.key not in keys if entry.key is not None else entry.index not in indices)
        ]

    def turns_for(self, task: TaskRef | None) -> Sequence[ScriptTurn] | None:
        """The scripted turns of `task`: its own if listed with turns (key first), else
        `[default]`'s, else None (the built-in default policy answers)."""
        listed = self.listed(task)
        if listed is not None and listed.turn:
            return listed.turn
        return self.default.turn if self.default is not None else None

    def oracle_for(self, task: TaskRef | None) -> str | None:
        """The reference reply the script gives for `task` (`oracle`), if any."""
        listed = self.listed(task)
        return listed.oracle if listed is not None else None

    def judge_for(self, task: TaskRef | None) -> Reply | None:
        """The reply to a judge call of `task`'s episode: the task's `judge`/`judge_reply`,
        else the script's, else None (the scripted model's default verdict)."""
        listed = self.listed(task)
        answer = listed.judge_answer() if listed is not None else None
        if answer is None and self.judge_reply is not None:
            answer = Reply.text(self.judge_reply)
        if answer is None and self.judge is not None:
            answer = Reply.verdict(self.judge)
        return answer

    def judge_reply_for(self, task: TaskRef | None) -> str | None:
        """The raw judge reply the script gives for `task` (its own, else the script's), if
        any: the judge's format, which the checks that play verdicts on purpose (the reward
        probes, `judge.*`) say their verdicts in."""
        answer = self.judge_for(task)
        return answer.content if answer is not None and answer.verdict_kind is None else None

    def unservable_apart(self) -> str | None:
        """Why `vfcheck mock-server` cannot play this script as `check` does, or None. In
        another process the mock sees only verifiers' `X-Session-ID`, a fresh trace id that
        names no task (nobody binds it), and env code's own requests never reach it: so a
        `[[task]]`'s turns or judge, and `[[http]]`, would silently not be served."""
        entries = [f"[[task]] {n} ({'key' if t.key is not None else 'index'} "
                   f"{t.key if t.key is not None else t.index!r})"
                   for n, t in enumerate(self.task, 1)
                   if t.turn or t.judge is not None or t.judge_reply is not None]
        if not entries and not self.http:
            return None
        held = " and ".join(([f"{len(entries)} task entr{'y' if len(entries) == 1 else 'ies'}"
                              f" ({', '.join(entries[:3])}{', ...' if len(entries) > 3 else ''})"]
                             if entries else [])
                            + ([f"{len(self.http)} [[http]] entr"
                                f"{'y' if len(self.http) == 1 else 'ies'}"] if self.http else []))
        return (f"mock-server cannot serve its {held}: in another process a request names no "
                f"task (verifiers' X-Session-ID is a fresh trace id) and env code's own "
                f"requests never reach the mock; replay it with vfcheck check/run --script "
                f"(or pytest --vf-script), or keep only [[default.turn]] and judge = ...")

    def http_answers(self) -> list[HttpAnswer]:
        """The `[[http]]` entries, for the scripted model's offline HTTP (in file order: the
        first that matches a request answers it)."""
        return [entry.answer() for entry in self.http]

    def tool_names(self) -> frozenset[str]:
        """Every tool a turn of the script calls (a harness built-in among them keeps the
        role on the env tier: `vfcheck._episodes.tiers.role_tiers`)."""
        turns = [t for task in self.task for t in task.turn]
        turns += self.default.turn if self.default is not None else []
        return frozenset([t.tool for t in turns if t.tool]
                         + [c.tool for t in turns for c in t.calls or []])

    def policy(self, seed: int | None = None) -> Policy:
        """The model policy this script describes; `seed` overrides the file's `seed`."""
        fallback = tool_policy(
            then=default_reply(self.seed if seed is None else seed),
            seed=self.seed if seed is None else seed,
        )

        def scripted(request: ModelRequest) -> Reply | None:
            if request.kind == "judge":
                return self.judge_for(request.task)
            turns = self.turns_for(request.task)
            if turns is not None and request.turn < len(turns):
                return turns[request.turn].reply_for(request)
            if self.fallback == "error":
                return Reply.fault(Fault.STATUS, status=404, message=_miss(request, turns))
            return fallback(request)

        return scripted


def seed_that_plays(seed: int | None, script: str | os.PathLike[str] | None) -> int:
    """The seed a run plays: the one given (`--seed`), else the script file's, else 0 (what
    the header, the replay line, the golden header, the mock and the reports all read)."""
    if seed is not None:
        return seed
    return Script.load(script).seed if script else 0


def _miss(request: ModelRequest, turns: Sequence[ScriptTurn] | None) -> str:
    """One line naming the task and the turn a `fallback = "error"` script does not hold."""
    task = request.task
    if task is None:
        named = "an unbound session (no task)"
    else:
        named = f"task {task.key!r}" if task.key is not None else "task"
        named += f" (index {task.index})" if task.index is not None else ""
    count = len(turns) if turns else 0
    held = f"it holds {count or 'no'} turn{'' if count == 1 else 's'} of it"
    return (f"{SCRIPT_MISS} {request.turn} of {named} ({held}): record it again "
            f"(vfcheck record), or set fallback = \"default\" in the script")


def _tool_call(name: str, arguments: dict[str, Any] | None, raw_arguments: str | None,
               request: ModelRequest) -> ToolCall:
    if raw_arguments is not None:
        return ToolCall(name, raw_arguments)
    return Reply.tool(name, _fill_values(arguments or {}, request)).tool_calls[0]


def _fill(text: str, request: ModelRequest) -> str:
    if not any(placeholder in text for placeholder in PLACEHOLDERS):
        return text
    return text.replace("{last_tool_result}", request.last_tool_result or "").replace(
        "{last_user}", request.last_user_text or ""
    )


def _fill_values(value: Any, request: ModelRequest) -> Any:
    if isinstance(value, str):
        return _fill(value, request)
    if isinstance(value, Mapping):
        return {key: _fill_values(item, request) for key, item in value.items()}
    if isinstance(value, list):
        return [_fill_values(item, request) for item in value]
    return value


def _one_line(text: str) -> str:
    return " ".join(text.split())


_FIELDS_BY_TABLE: dict[str, type[BaseModel]] = {
    "": Script,
    "task": ScriptTask,
    "default": ScriptTurns,
    "turn": ScriptTurn,
    "http": ScriptHttp,
    "calls": ScriptCall,
}


def _describe(error: ValidationError, data: Mapping[str, Any]) -> str:
    """The first validation problem as `where: what`, in the file's own terms."""
    problems = error.errors()
    first = problems[0]
    text = f"{_where(first, data)}: {_what(first)}"
    if len(problems) > 1:
        text += f" (and {len(problems) - 1} more problem{'s' if len(problems) > 2 else ''})"
    return _one_line(text)


def _where(problem: ErrorDetails, data: Mapping[str, Any]) -> str:
    """`task 1 (key 'x'), turn 2` for loc ("task", 0, "turn", 1, ...): tables count from 1 in
    file order, as a person reads the `[[...]]` headers; a leaf field is in backticks."""
    parts: list[str] = []
    node: Any = data
    loc = problem["loc"]
    if problem["type"] == "extra_forbidden":
        loc = loc[:-1]
    for step in loc:
        node = _child(node, step)
        if isinstance(step, int):
            label = f"{parts.pop() if parts else 'item'} {step + 1}"
            if isinstance(node, dict) and ("key" in node or "index" in node):
                selector = "key" if "key" in node else "index"
                label += f" ({selector} {node[selector]!r})"
            parts.append(label)
        else:
            parts.append(step if isinstance(node, list | dict) else f"`{step}`")
    return ", ".join(parts) or "top level"


def _child(node: Any, step: int | str) -> Any:
    if isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node):
        return node[step]
    if isinstance(node, dict) and isinstance(step, str):
        return node.get(step)
    return None


_TABLE_EXPECTED = {
    "model_type": "expected a table",
    "model_attributes_type": "expected a table",
    "dict_type": "expected a table",
    "list_type": "expected an array of tables ([[...]])",
}


def _what(problem: ErrorDetails) -> str:
    kind = problem["type"]
    if kind == "extra_forbidden":
        name = problem["loc"][-1]
        table = next((step for step in reversed(problem["loc"][:-1]) if isinstance(step, str)), "")
        allowed = (
            ", ".join(field.alias or name
                      for name, field in _FIELDS_BY_TABLE[table].model_fields.items())
            if table in _FIELDS_BY_TABLE else ""
        )
        return f"unknown field `{name}`" + (f" (allowed: {allowed})" if allowed else "")
    if kind == "value_error":  # our own validators: already say what was found
        return problem["msg"].removeprefix("Value error, ")
    message = _TABLE_EXPECTED.get(kind, problem["msg"])
    if kind == "missing":
        return message
    return f"{message}, got {problem['input']!r}"
