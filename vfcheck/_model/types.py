"""The scripted model's vocabulary: requests, replies, faults, verdicts, what a policy is.

Plain data, no transport: a policy (`Callable[[ModelRequest], Reply | None]`) reads a
`ModelRequest` and answers a `Reply` (or None, "no opinion"); the core records each answer
as a `RequestRecord` and hands the transports a `WireResponse`. A request is an agent turn
(it carries verifiers' `X-Session-ID`) or a judge call (env code calling a judge while it
scores an episode: no session header), attributed to an `EpisodeRef`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, TypeAlias

SESSION_ID_HEADER = "X-Session-ID"
"""verifiers' per-rollout header on every upstream request: the trace id (clients/client.py)."""

HUGE_REPLY_CHARS = 100_000

RequestKind: TypeAlias = Literal["agent", "judge"]
"""`agent`: a turn of an episode's agent (it has `X-Session-ID`); `judge`: a judge call."""


@dataclass(frozen=True)
class TaskRef:
    """Which task a session (trace) belongs to: its index in the taskset and/or its key."""

    index: int | None = None
    key: str | None = None


class Fault(StrEnum):
    """A misbehaviour of the model endpoint to inject, as a `Reply.fault(...)`."""

    STATUS = "status"
    """HTTP `status` (429, 500, 503, ...) with OpenAI's `{"error": {...}}` JSON body."""
    MALFORMED = "malformed"
    """200 whose body is garbage: not JSON (plain request), not JSON events (stream)."""
    CUT = "cut"
    """The reply stops early: a stream ends before any finish_reason and before `[DONE]`; a
    plain JSON body is truncated halfway."""
    EMPTY = "empty"
    """A well-formed reply whose content is ""."""
    HUGE = "huge"
    """A well-formed reply whose content is `size` characters (100 kB by default)."""
    HANG = "hang"
    """Never answers: awaits forever, so only cancellation (a timeout) ends the request."""


class Verdict(StrEnum):
    """What a judge's reply says, as a `Reply.verdict(...)`; the labels come from the
    judge's prompt (`vfcheck._model.judges`)."""

    POSITIVE = "positive"
    """The judge's positive label ("yes", "correct", "A", the best rubric choice)."""
    NEGATIVE = "negative"
    """The judge's negative label ("no", "incorrect", "B", the worst rubric choice)."""
    GARBAGE = "garbage"
    """A reply matching neither label ("I cannot decide."); for a structured-output judge,
    a JSON object that is not valid for its schema."""


@dataclass(frozen=True, eq=False)
class EpisodeRef:
    """One play of a task: the judge calls made while it is scored belong to it.

    The runner opens one per play (`episode_scope`) and appends each trace id verifiers
    mints for it (`on_trace`); compared by identity, so two plays of one task differ.
    """

    task: TaskRef
    trace_ids: list[str] = field(default_factory=list)
    judge: Verdict | None = None
    """The verdict this scope's judge calls get when no policy answers them (None: the
    model's `DEFAULT_VERDICT`); vfcheck's gold check scopes its scoring `positive`, noop
    `negative`."""
    stage: Callable[[], str] | None = None
    """Where in the play env code is now (`scoring of an episode`, `the gold check`): the
    runner reads it off the live trace; it names the stage of an offline HTTP request."""


@dataclass(frozen=True)
class ToolCall:
    """One tool call of a reply. `arguments` is the JSON text sent on the wire, as-is, so a
    script can send invalid JSON on purpose; `id` None derives a stable id per request."""

    name: str
    arguments: str = "{}"
    id: str | None = None


@dataclass(frozen=True)
class Reply:
    """What the model answers to one request: text and/or tool calls, a fault, or a verdict.

    Build it with `Reply.text`, `Reply.tool`, `Reply.fault` or `Reply.verdict`. `fault_kind`
    is None for a normal reply; `status` and `message` matter for `Fault.STATUS` only,
    `size` for `Fault.HUGE` only. A verdict reply has no content until the model renders
    it for the request (`content` then holds what was sent, `labels` the labels used).
    """

    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    fault_kind: Fault | None = None
    status: int = 200
    size: int = HUGE_REPLY_CHARS
    message: str | None = None
    verdict_kind: Verdict | None = None
    labels: tuple[str, str] | None = None
    """(positive, negative) labels of a verdict; None reads them from the judge's prompt."""
    verdict_format: str | None = None
    """How a rendered verdict was said, when not in labels read as before: `a JSON object
    (...), read from its prompt: <the line>` (`vfcheck._model.verdict_formats`)."""
    unreadable: str | None = None
    """Set on a rendered verdict when the judge's own parser read none of the formats
    tried: the judge class, its prompt's line and what was tried (checks skip on it)."""
    example: str | None = None
    """A reply in the judge's own format (a script's `judge_reply`): a verdict is said in
    the format it is written in before any format read from the prompt."""

    def __post_init__(self) -> None:
        if self.fault_kind is Fault.STATUS:
            if not 400 <= self.status <= 599:
                raise ValueError(f"a status fault needs a 4xx/5xx status, got {self.status}")
        elif self.status != 200:
            raise ValueError(
                f"status={self.status} needs fault_kind=Fault.STATUS, got {self.fault_kind}"
            )
        if self.size < 0:
            raise ValueError(f"size must be >= 0, got {self.size}")
        if self.verdict_kind is not None and self.fault_kind is not None:
            raise ValueError("a Reply is a verdict or a fault, not both")
        if self.labels is not None:
            positive, negative = self.labels
            if not positive or not negative or positive.casefold() == negative.casefold():
                raise ValueError(f"labels need two distinct non-empty strings, got {self.labels}")
        no_content = self.content is None and not self.tool_calls
        if self.fault_kind is None and self.verdict_kind is None and no_content:
            raise ValueError("a Reply needs content, tool_calls, a fault or a verdict")

    @classmethod
    def text(cls, content: str) -> Reply:
        return cls(content=content)

    @classmethod
    def tool(
        cls,
        name: str,
        arguments: Mapping[str, Any] | str | None = None,
        *,
        call_id: str | None = None,
        content: str | None = None,
    ) -> Reply:
        """One tool call. A dict of arguments is sent as compact JSON; a string is sent as-is
        (so `'{bad json'` reaches the env unchanged)."""
        if arguments is None:
            arguments = {}
        text = (
            arguments
            if isinstance(arguments, str)
            else json.dumps(dict(arguments), separators=(",", ":"), ensure_ascii=False)
        )
        return cls(content=content, tool_calls=(ToolCall(name, text, call_id),))

    @classmethod
    def fault(
        cls,
        kind: Fault | str,
        *,
        status: int = 500,
        size: int = HUGE_REPLY_CHARS,
        message: str | None = None,
    ) -> Reply:
        """A fault reply, e.g. `Reply.fault("status", status=503)` or `Reply.fault("hang")`."""
        fault = Fault(kind)
        return cls(
            fault_kind=fault,
            status=status if fault is Fault.STATUS else 200,
            size=size,
            message=message,
        )

    @classmethod
    def verdict(cls, kind: Verdict | str, *, labels: tuple[str, str] | None = None,
                example: str | None = None) -> Reply:
        """A judge's verdict, e.g. `Reply.verdict("negative")`, rendered for the request it
        answers: the label itself, or a JSON object for a judge with a `response_format`
        schema. `labels` (positive, negative) overrides the ones read from the prompt;
        `example`, a reply in the judge's format (a script's `judge_reply`), is the format
        tried first."""
        if labels is not None and len(labels) != 2:
            raise ValueError(f"labels are (positive, negative), got {labels!r}")
        pair = None if labels is None else (str(labels[0]), str(labels[1]))
        return cls(verdict_kind=Verdict(kind), labels=pair, example=example)

    @property
    def finish_reason(self) -> Literal["stop", "tool_calls"]:
        return "tool_calls" if self.tool_calls else "stop"


@dataclass(frozen=True)
class ModelRequest:
    """One chat-completions request as a policy sees it.

    `kind` says whether it is an agent turn or a judge call; `episode` is the play it
    belongs to (an agent turn's session was bound to it; a judge call came in its
    `episode_scope`), if known. `turn` is how many requests this session made before this
    one (counted by the model, so a retry after a fault is the next turn; judge calls count
    per episode, and those outside any episode share one count); `task` is the task of the
    session or the episode, if known. Everything else is derived from the JSON `body`.
    """

    body: Mapping[str, Any]
    session_id: str | None = None
    task: TaskRef | None = None
    turn: int = 0
    path: str = "/v1/chat/completions"
    headers: Mapping[str, str] = field(default_factory=dict)
    kind: RequestKind = "agent"
    episode: EpisodeRef | None = None

    @property
    def prompt_text(self) -> str:
        """The text of every message, in order, one per line: where a judge's prompt says
        which labels it wants."""
        return "\n".join(text_of(message.get("content")) for message in self.messages)

    @property
    def response_schema(self) -> Mapping[str, Any] | None:
        """The JSON schema of a structured-output request (`response_format` of type
        `json_schema`, as `beta.chat.completions.parse` sends it), else None."""
        response_format = self.body.get("response_format")
        if not isinstance(response_format, dict) or response_format.get("type") != "json_schema":
            return None
        spec = response_format.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, dict) else None
        return schema if isinstance(schema, dict) else None

    @property
    def messages(self) -> list[dict[str, Any]]:
        raw = self.body.get("messages")
        return [m for m in raw if isinstance(m, dict)] if isinstance(raw, list) else []

    @property
    def tools(self) -> list[dict[str, Any]]:
        raw = self.body.get("tools")
        return [t for t in raw if isinstance(t, dict)] if isinstance(raw, list) else []

    @property
    def model(self) -> str:
        """The requested model name; "" when the body names none."""
        model = self.body.get("model")
        return model if isinstance(model, str) else ""

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def tool_parameters(self) -> dict[str, Mapping[str, Any]]:
        """Offered tool name -> its JSON-schema `parameters`, in offered order."""
        offered: dict[str, Mapping[str, Any]] = {}
        for tool in self.tools:
            # Chat tools nest under "function"; accept a flat (Responses-style) shape too.
            nested = tool.get("function")
            spec: Mapping[str, Any] = nested if isinstance(nested, dict) else tool
            name = spec.get("name")
            if isinstance(name, str):
                parameters = spec.get("parameters")
                offered[name] = parameters if isinstance(parameters, dict) else {}
        return offered

    @property
    def called_tool_names(self) -> list[str]:
        """Names of the tools that earlier assistant turns in `messages` called, in order."""
        called: list[str] = []
        for message in self.messages:
            if message.get("role") != "assistant":
                continue
            for call in message.get("tool_calls") or []:
                function = call.get("function") if isinstance(call, dict) else None
                if isinstance(function, dict) and isinstance(function.get("name"), str):
                    called.append(function["name"])
        return called

    @property
    def last_user_text(self) -> str | None:
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return text_of(message.get("content"))
        return None

    @property
    def last_tool_result(self) -> str | None:
        for message in reversed(self.messages):
            if message.get("role") == "tool":
                return text_of(message.get("content"))
        return None


Policy: TypeAlias = Callable[[ModelRequest], Reply | None]


@dataclass(frozen=True)
class RequestRecord:
    """One answered chat-completions request. `status` is None for a hang (nothing sent).
    A judge call is one with `request.kind == "judge"` (`ScriptedModel.judge_calls`)."""

    request: ModelRequest
    reply: Reply
    status: int | None


@dataclass(frozen=True)
class WireResponse:
    """A transport-neutral HTTP response: a whole body, or SSE events to stream one by one."""

    status: int
    headers: Mapping[str, str]
    body: bytes | AsyncIterator[bytes]


def text_of(content: Any) -> str:
    """Text of a message `content`: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def stable_digest(*parts: object) -> str:
    """A hex digest of `parts`, the same in every process: the seed of every derived id."""
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()
