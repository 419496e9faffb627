"""A scripted, OpenAI-compatible model: the one thing vfcheck mocks.

verifiers' interception server forwards every model request upstream with a plain
`httpx.AsyncClient` (`verifiers/v1/clients/eval.py`), always with `"stream": true` and an
`X-Session-ID` header holding the trace id (`verifiers/v1/clients/client.py`). A
`ScriptedModel` answers that upstream request, either in-process under a respx router
(`ScriptedModel.mock`) or on 127.0.0.1 (`ScriptedModel.serve`, `serve_forever`) for `vf-eval`
in another process. Both transports share one transport-neutral core, `ScriptedModel.handle`.

What to answer is a *policy*: `Callable[[ModelRequest], Reply | None]`, where None means "no
opinion, ask the next one" (see `first_of`). A `Reply` is text, tool calls, or a `Fault` to
inject. Wire payloads are built from the `openai` package's types so the format is the real
one; ids, `created` and token counts are deterministic so that traces can be compared.
"""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import json
import logging
import math
import random
import signal
import socket
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, NoReturn, TypeAlias

import httpx
import respx
from aiohttp import web
from openai.types import CompletionUsage, Model
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionMessage,
    ChatCompletionMessageFunctionToolCall,
    ChatCompletionMessageToolCallUnion,
)
from openai.types.chat.chat_completion import Choice
from openai.types.chat.chat_completion_chunk import Choice as ChunkChoice
from openai.types.chat.chat_completion_chunk import (
    ChoiceDelta,
    ChoiceDeltaToolCall,
    ChoiceDeltaToolCallFunction,
)
from openai.types.chat.chat_completion_message_function_tool_call import Function

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_MODEL_ID",
    "HARNESS_BUILTIN_TOOLS",
    "HUGE_REPLY_CHARS",
    "SESSION_ID_HEADER",
    "Fault",
    "ModelRequest",
    "Policy",
    "PolicyRouter",
    "Reply",
    "RequestRecord",
    "ScriptedModel",
    "TaskRef",
    "ToolCall",
    "WireResponse",
    "default_reply",
    "first_of",
    "fixed",
    "from_function",
    "generate_arguments",
    "per_task",
    "sequence",
    "serve_forever",
    "tool_policy",
]

logger = logging.getLogger(__name__)

SESSION_ID_HEADER = "X-Session-ID"
"""verifiers' per-rollout header on every upstream request: the trace id (clients/client.py)."""

DEFAULT_MODEL_ID = "vfcheck-scripted"
DEFAULT_BASE_URL = "http://scripted-model.vfcheck.invalid/v1"
"""Unresolvable on purpose: only the mock can answer it."""

HUGE_REPLY_CHARS = 100_000
HARNESS_BUILTIN_TOOLS: frozenset[str] = frozenset({"bash", "edit", "search"})
"""Tools the harness offers itself (verifiers/v1/harnesses/bash): not the env's to test."""

_LOOPBACK_HOST = r"^(?:127(?:\.\d{1,3}){3}|localhost|::1)$"
_CREATED = 0  # a fixed `created` keeps the wire bytes of a reply reproducible
_SSE_CONTENT_TYPE = "text/event-stream; charset=utf-8"
_JSON_CONTENT_TYPE = "application/json"
_MALFORMED_BODY = b"<html><body><h1>502 Bad Gateway</h1> scripted garbage {{{</body></html>"
_CUT_TEXT = "this reply is cut off before it ends, and before any finish_reason"
_HUGE_UNIT = "scripted huge reply. "


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


@dataclass(frozen=True)
class ToolCall:
    """One tool call of a reply. `arguments` is the JSON text sent on the wire, as-is, so a
    script can send invalid JSON on purpose; `id` None derives a stable id per request."""

    name: str
    arguments: str = "{}"
    id: str | None = None


@dataclass(frozen=True)
class Reply:
    """What the model answers to one request: text and/or tool calls, or a fault.

    Build it with `Reply.text`, `Reply.tool` or `Reply.fault`. `fault_kind` is None for a
    normal reply; `status` and `message` matter for `Fault.STATUS` only, `size` for
    `Fault.HUGE` only.
    """

    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    fault_kind: Fault | None = None
    status: int = 200
    size: int = HUGE_REPLY_CHARS
    message: str | None = None

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
        if self.fault_kind is None and self.content is None and not self.tool_calls:
            raise ValueError("a Reply needs content, tool_calls or a fault")

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

    @property
    def finish_reason(self) -> Literal["stop", "tool_calls"]:
        return "tool_calls" if self.tool_calls else "stop"


@dataclass(frozen=True)
class ModelRequest:
    """One chat-completions request as a policy sees it.

    `turn` is how many requests this session made before this one (counted by the model, so
    a retry after a fault is the next turn; requests without `X-Session-ID` share one
    count); `task` is the task the session was bound to, if known. Everything else is
    derived from the JSON `body`.
    """

    body: Mapping[str, Any]
    session_id: str | None = None
    task: TaskRef | None = None
    turn: int = 0
    path: str = "/v1/chat/completions"
    headers: Mapping[str, str] = field(default_factory=dict)

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
                return _text_of(message.get("content"))
        return None

    @property
    def last_tool_result(self) -> str | None:
        for message in reversed(self.messages):
            if message.get("role") == "tool":
                return _text_of(message.get("content"))
        return None


Policy: TypeAlias = Callable[[ModelRequest], Reply | None]


@dataclass(frozen=True)
class RequestRecord:
    """One answered chat-completions request. `status` is None for a hang (nothing sent)."""

    request: ModelRequest
    reply: Reply
    status: int | None


@dataclass(frozen=True)
class WireResponse:
    """A transport-neutral HTTP response: a whole body, or SSE events to stream one by one."""

    status: int
    headers: Mapping[str, str]
    body: bytes | AsyncIterator[bytes]


# ---------------------------------------------------------------------------------- policies


def fixed(reply: str | Reply) -> Policy:
    """Always the same reply."""
    answer = Reply.text(reply) if isinstance(reply, str) else reply
    return lambda request: answer


def sequence(*replies: str | Reply) -> Policy:
    """Reply N for the session's turn N; the last reply repeats."""
    if not replies:
        raise ValueError("sequence() needs at least one reply")
    answers = [Reply.text(r) if isinstance(r, str) else r for r in replies]
    return lambda request: answers[min(request.turn, len(answers) - 1)]


def from_function(fn: Callable[[ModelRequest], Reply | str | None]) -> Policy:
    """A policy from any function of the request (which carries the task); str means text."""

    def policy(request: ModelRequest) -> Reply | None:
        answer = fn(request)
        return Reply.text(answer) if isinstance(answer, str) else answer

    return policy


def first_of(*policies: Policy) -> Policy:
    """The first policy with an opinion (a non-None reply) wins."""

    def policy(request: ModelRequest) -> Reply | None:
        for candidate in policies:
            answer = candidate(request)
            if answer is not None:
                return answer
        return None

    return policy


def per_task(mapping: Mapping[int | str, Policy]) -> Policy:
    """Route by task: an int key matches the task index, a str key the task key (tried
    first). No opinion for unbound sessions and unlisted tasks."""

    def policy(request: ModelRequest) -> Reply | None:
        task = request.task
        if task is None:
            return None
        if task.key is not None and task.key in mapping:
            return mapping[task.key](request)
        if task.index is not None and task.index in mapping:
            return mapping[task.index](request)
        return None

    return policy


@dataclass
class PolicyRouter:
    """The mock's policy: per trace id an assigned policy, else `base`."""

    base: Policy | None = None
    assigned: dict[str, Policy] = field(default_factory=dict)

    def __call__(self, request: ModelRequest) -> Reply | None:
        policy = self.assigned.get(request.session_id or "", self.base)
        return None if policy is None else policy(request)


def default_reply(seed: int = 0) -> Policy:
    """A deterministic final answer, so that simple envs are solved without a script:

    - the last message is a tool result -> its content (what a tool-using env checks);
    - else echo the text of the last user message (echo-style envs);
    - else a short text derived from a hash of (seed, messages).
    """

    def policy(request: ModelRequest) -> Reply:
        return Reply.text(_default_text(request, seed))

    return policy


def tool_policy(
    then: Policy, seed: int = 0, *, builtins: frozenset[str] = HARNESS_BUILTIN_TOOLS
) -> Policy:
    """Call each of the env's own tools once, one call per turn, in offered order, with
    arguments generated from its schema; then defer to `then`.

    "The env's own" = offered tools whose names are not harness `builtins`. Which tools were
    already called is read from the assistant turns in the request's `messages`, so the
    policy is stateless (a retried or replayed request gets the same answer).
    """

    def policy(request: ModelRequest) -> Reply | None:
        called = set(request.called_tool_names)
        for name, parameters in request.tool_parameters.items():
            if name not in builtins and name not in called:
                return Reply.tool(name, generate_arguments(parameters, seed=seed, tool_name=name))
        return then(request)

    return policy


def _default_text(request: ModelRequest, seed: int) -> str:
    messages = request.messages
    if messages and messages[-1].get("role") == "tool":
        return _text_of(messages[-1].get("content"))
    user_text = request.last_user_text
    if user_text is not None:
        return user_text
    digest = _digest(seed, json.dumps(messages, sort_keys=True, default=str))
    return f"scripted reply {digest[:8]}"


def _text_of(content: Any) -> str:
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


def _digest(*parts: object) -> str:
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()


# ------------------------------------------------------------------------- tool arguments

_WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india")
_STRING_FORMATS = {
    "date": "2024-01-02",
    "date-time": "2024-01-02T03:04:05Z",
    "time": "03:04:05",
    "email": "someone@example.com",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "uuid": "00000000-0000-4000-8000-000000000000",
}
_MAX_SCHEMA_DEPTH = 8


def generate_arguments(
    parameters: Mapping[str, Any], *, seed: int = 0, tool_name: str = ""
) -> dict[str, Any]:
    """Arguments that satisfy a tool's JSON schema, the same for the same (seed, tool_name).

    Covers strings (formats, lengths), integers and numbers (bounds), booleans, enums and
    consts, arrays (min/max items), nested objects, local `$ref`s (`$defs`) and
    `anyOf`/`oneOf`/`allOf`. An object gets its required properties, or all of them when
    the schema lists no `required`.
    """
    rng = random.Random(int(_digest(seed, tool_name), 16))
    value = _example(parameters, parameters, rng, 0)
    return value if isinstance(value, dict) else {}


def _example(
    schema: Mapping[str, Any], root: Mapping[str, Any], rng: random.Random, depth: int
) -> Any:
    if depth > _MAX_SCHEMA_DEPTH:
        return None
    schema = _resolve_ref(schema, root)
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return rng.choice(schema["enum"])
    for combinator in ("anyOf", "oneOf"):
        options = [o for o in schema.get(combinator) or [] if isinstance(o, dict)]
        if options:
            concrete = [o for o in options if o.get("type") != "null"] or options
            return _example(concrete[0], root, rng, depth + 1)
    if isinstance(schema.get("allOf"), list):
        schema = _merge_all_of(schema, root)
    kind = _schema_type(schema)
    if kind == "object":
        properties = schema.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        required = schema.get("required")
        names = list(properties) if not isinstance(required, list) else list(required)
        return {
            name: _example(properties.get(name) or {"type": "string"}, root, rng, depth + 1)
            for name in names
        }
    if kind == "array":
        items = schema.get("items")
        items = items if isinstance(items, dict) else {"type": "string"}
        count = max(int(schema.get("minItems", 1)), 1)
        if isinstance(schema.get("maxItems"), int):
            count = min(count, schema["maxItems"])
        return [_example(items, root, rng, depth + 1) for _ in range(count)]
    if kind == "integer":
        low, high = _bounds(schema, 0, 100, step=1)
        return rng.randint(math.ceil(low), max(math.ceil(low), math.floor(high)))
    if kind == "number":
        low, high = _bounds(schema, 0.0, 100.0, step=0.01)
        return min(max(round(rng.uniform(low, high), 2), low), high)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "null":
        return None
    return _example_string(schema, rng)


def _resolve_ref(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    """Follow local `#/...` refs (pydantic puts models under `$defs`); unknown refs -> {}."""
    seen = 0
    while isinstance(schema.get("$ref"), str) and seen < _MAX_SCHEMA_DEPTH:
        target: Any = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target.get(part) if isinstance(target, dict) else None
        schema = target if isinstance(target, dict) else {}
        seen += 1
    return schema


def _merge_all_of(schema: Mapping[str, Any], root: Mapping[str, Any]) -> dict[str, Any]:
    merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
    for part in schema["allOf"]:
        if not isinstance(part, dict):
            continue
        part = _resolve_ref(part, root)
        for key, value in part.items():
            if key == "properties" and isinstance(value, dict):
                merged["properties"] = {**merged.get("properties", {}), **value}
            elif key == "required" and isinstance(value, list):
                merged["required"] = [*merged.get("required", []), *value]
            else:
                merged.setdefault(key, value)
    return merged


def _schema_type(schema: Mapping[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        concrete = [k for k in kind if k != "null"]
        kind = concrete[0] if concrete else "null"
    if isinstance(kind, str):
        return kind
    if "properties" in schema:
        return "object"
    if "items" in schema:
        return "array"
    return "string"


def _bounds(
    schema: Mapping[str, Any], low: float, high: float, *, step: float
) -> tuple[float, float]:
    """[low, high] from minimum/maximum (exclusive ones shrink by `step`); an open upper end
    stays `high - low` above the lower bound."""
    span = high - low
    if isinstance(schema.get("minimum"), int | float):
        low = schema["minimum"]
    if isinstance(schema.get("exclusiveMinimum"), int | float):
        low = schema["exclusiveMinimum"] + step
    high = low + span
    if isinstance(schema.get("maximum"), int | float):
        high = schema["maximum"]
    if isinstance(schema.get("exclusiveMaximum"), int | float):
        high = min(high, schema["exclusiveMaximum"] - step)
    return low, max(low, high)


def _example_string(schema: Mapping[str, Any], rng: random.Random) -> str:
    text = _STRING_FORMATS.get(
        str(schema.get("format")), f"{rng.choice(_WORDS)} {rng.choice(_WORDS)}"
    )
    min_length = schema.get("minLength")
    if isinstance(min_length, int) and len(text) < min_length:
        text = text + "x" * (min_length - len(text))
    max_length = schema.get("maxLength")
    if isinstance(max_length, int):
        text = text[:max_length]
    return text


# --------------------------------------------------------------------------- wire format


def _error_body(status: int, message: str | None) -> bytes:
    """OpenAI's error shape: `{"error": {"message", "type", "param", "code"}}`."""
    if status == 429:
        kind, code, default = "requests", "rate_limit_exceeded", "Rate limit reached"
    elif status >= 500:
        kind, code = "server_error", None
        default = (
            "The engine is currently overloaded, please try again later"
            if status == 503
            else "The server had an error while processing your request"
        )
    else:
        kind, code, default = "invalid_request_error", None, "Invalid request"
    text = message or f"{default} (vfcheck scripted fault, HTTP {status})"
    error = {"message": text, "type": kind, "param": None, "code": code}
    return json.dumps({"error": error}).encode()


def _error_response(status: int, message: str) -> WireResponse:
    return WireResponse(status, {"content-type": _JSON_CONTENT_TYPE}, _error_body(status, message))


def _content_of(reply: Reply) -> str | None:
    if reply.fault_kind is Fault.EMPTY:
        return ""
    if reply.fault_kind is Fault.HUGE:
        repeats = reply.size // len(_HUGE_UNIT) + 1
        return (_HUGE_UNIT * repeats)[: reply.size]
    return reply.content


def _pieces(text: str) -> list[str]:
    """Split text into stream deltas; at most ~256 of them, however long the text."""
    size = max(16, -(-len(text) // 256))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _usage(request: ModelRequest, completion: str) -> CompletionUsage:
    """A rough, deterministic token count (4 characters a token)."""
    prompt_tokens = max(1, len(json.dumps(request.messages, default=str)) // 4)
    completion_tokens = max(1, len(completion) // 4)
    return CompletionUsage(
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        total_tokens=prompt_tokens + completion_tokens,
    )


@dataclass(frozen=True)
class _Rendering:
    """The per-request identities every payload of one reply shares."""

    request: ModelRequest
    model: str
    completion_id: str
    call_ids: tuple[str, ...]

    @classmethod
    def of(cls, request: ModelRequest, reply: Reply, seed: int, model: str) -> _Rendering:
        session = request.session_id or _digest(json.dumps(request.messages, default=str))
        call_ids = tuple(
            call.id or f"call_{_digest(seed, session, request.turn, i, call.name)[:24]}"
            for i, call in enumerate(reply.tool_calls)
        )
        completion_id = f"chatcmpl-{_digest(seed, session, request.turn)[:24]}"
        return cls(request, request.model or model, completion_id, call_ids)

    def chunk(
        self,
        delta: ChoiceDelta,
        finish_reason: Literal["stop", "tool_calls"] | None = None,
    ) -> bytes:
        choice = ChunkChoice(index=0, delta=delta, finish_reason=finish_reason, logprobs=None)
        return self._event(
            ChatCompletionChunk(
                id=self.completion_id,
                object="chat.completion.chunk",
                created=_CREATED,
                model=self.model,
                choices=[choice],
            )
        )

    def usage_chunk(self, completion: str) -> bytes:
        return self._event(
            ChatCompletionChunk(
                id=self.completion_id,
                object="chat.completion.chunk",
                created=_CREATED,
                model=self.model,
                choices=[],
                usage=_usage(self.request, completion),
            )
        )

    @staticmethod
    def _event(chunk: ChatCompletionChunk) -> bytes:
        return b"data: " + chunk.model_dump_json(exclude_unset=True).encode() + b"\n\n"

    def stream_events(self, content: str | None, calls: Sequence[ToolCall]) -> list[bytes]:
        """OpenAI's order: role (+ content ""), content deltas, per tool call a header delta
        (index, id, type, name, arguments "") then argument deltas, a finish chunk, the usage
        chunk (`choices: []`), `[DONE]`."""
        events: list[bytes] = []
        if content is not None or not calls:
            events.append(self.chunk(ChoiceDelta(role="assistant", content="")))
            events += [self.chunk(ChoiceDelta(content=p)) for p in _pieces(content or "") if p]
        for index, call in enumerate(calls):
            header = ChoiceDeltaToolCall(
                index=index,
                id=self.call_ids[index],
                type="function",
                function=ChoiceDeltaToolCallFunction(name=call.name, arguments=""),
            )
            if events:
                events.append(self.chunk(ChoiceDelta(tool_calls=[header])))
            else:
                delta = ChoiceDelta(role="assistant", content=None, tool_calls=[header])
                events.append(self.chunk(delta))
            for piece in _pieces(call.arguments) if call.arguments else []:
                argument = ChoiceDeltaToolCall(
                    index=index, function=ChoiceDeltaToolCallFunction(arguments=piece)
                )
                events.append(self.chunk(ChoiceDelta(tool_calls=[argument])))
        events.append(self.chunk(ChoiceDelta(), "tool_calls" if calls else "stop"))
        completion = (content or "") + "".join(call.arguments for call in calls)
        events.append(self.usage_chunk(completion))
        events.append(b"data: [DONE]\n\n")
        return events

    def completion(self, content: str | None, calls: Sequence[ToolCall]) -> ChatCompletion:
        tool_calls: list[ChatCompletionMessageToolCallUnion] = [
            ChatCompletionMessageFunctionToolCall(
                id=self.call_ids[index],
                type="function",
                function=Function(name=call.name, arguments=call.arguments),
            )
            for index, call in enumerate(calls)
        ]
        message = ChatCompletionMessage(role="assistant", content=content, refusal=None)
        if tool_calls:
            message = ChatCompletionMessage(
                role="assistant", content=content, refusal=None, tool_calls=tool_calls
            )
        completion = (content or "") + "".join(call.arguments for call in calls)
        return ChatCompletion(
            id=self.completion_id,
            object="chat.completion",
            created=_CREATED,
            model=self.model,
            choices=[
                Choice(
                    index=0,
                    message=message,
                    finish_reason="tool_calls" if calls else "stop",
                    logprobs=None,
                )
            ],
            usage=_usage(self.request, completion),
        )


def _render(reply: Reply, request: ModelRequest, seed: int, model: str) -> WireResponse:
    """The HTTP response for a (non-hang) reply, streamed iff the request asked for it;
    `model` names the model when the request does not."""
    fault = reply.fault_kind
    if fault is Fault.STATUS:
        return _error_response(reply.status, reply.message or "")
    sse = {"content-type": _SSE_CONTENT_TYPE, "cache-control": "no-cache"}
    plain = {"content-type": _JSON_CONTENT_TYPE}
    if fault is Fault.MALFORMED:
        if request.stream:
            return WireResponse(200, sse, _paced([b"data: " + _MALFORMED_BODY + b"\n\n"]))
        return WireResponse(200, plain, _MALFORMED_BODY)
    rendering = _Rendering.of(request, reply, seed, model)
    if fault is Fault.CUT:
        if request.stream:
            events = rendering.stream_events(reply.content or _CUT_TEXT, ())
            content_events = len(events) - 3  # drop finish, usage and [DONE] ...
            return WireResponse(200, sse, _paced(events[: max(2, content_events // 2 + 1)]))
        whole = rendering.completion(reply.content or _CUT_TEXT, ()).model_dump_json(
            exclude_unset=True
        )
        return WireResponse(200, plain, whole[: len(whole) // 2].encode())
    content = _content_of(reply)
    if request.stream:
        return WireResponse(200, sse, _paced(rendering.stream_events(content, reply.tool_calls)))
    body = rendering.completion(content, reply.tool_calls).model_dump_json(exclude_unset=True)
    return WireResponse(200, plain, body.encode())


async def _paced(events: Sequence[bytes]) -> AsyncIterator[bytes]:
    """One SSE event per chunk, yielding to the loop between them like a real stream."""
    for event in events:
        yield event
        await asyncio.sleep(0)


async def _hang_forever() -> NoReturn:
    await asyncio.get_running_loop().create_future()
    raise AssertionError("unreachable: the future above is never resolved")


# ----------------------------------------------------------------------------- the model


class ScriptedModel:
    """An OpenAI-compatible model whose answers come from a policy, with a request log.

    `policy` None is the built-in default, `tool_policy(then=default_reply(seed), seed)`;
    a given policy that has no opinion (returns None) falls through to that default. The
    task of a request comes from its `X-Session-ID` header: a session `bind`-ed by the runner
    (from `on_trace`), else `task_of(session_id)`.
    """

    def __init__(
        self,
        policy: Policy | None = None,
        *,
        seed: int = 0,
        task_of: Callable[[str], TaskRef | None] | None = None,
        model_id: str = DEFAULT_MODEL_ID,
    ) -> None:
        self.seed = seed
        self.task_of = task_of
        self.model_id = model_id
        self.default_policy: Policy = tool_policy(then=default_reply(seed), seed=seed)
        self.policy: Policy = (
            self.default_policy if policy is None else first_of(policy, self.default_policy)
        )
        # Episodes may run on several loops/threads (serve_forever, a runner thread).
        self._lock = threading.Lock()
        self._records: list[RequestRecord] = []
        self._turns: dict[str | None, int] = {}
        self._bound: dict[str, TaskRef] = {}
        self._model_ids: dict[str, None] = {model_id: None}

    # -- state

    @property
    def requests(self) -> list[RequestRecord]:
        """Every chat-completions request answered so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._records)

    def bind(self, session_id: str, task: TaskRef) -> None:
        """Tie a session (verifiers' trace id) to its task; the runner calls it from
        `on_trace`, which fires at mint, before the first model request."""
        with self._lock:
            self._bound[session_id] = task

    def task_for(self, session_id: str | None) -> TaskRef | None:
        if session_id is None:
            return None
        with self._lock:
            bound = self._bound.get(session_id)
        if bound is not None or self.task_of is None:
            return bound
        return self.task_of(session_id)

    def reset(self) -> None:
        """Forget the request log and the per-session turn counts (bindings stay)."""
        with self._lock:
            self._records.clear()
            self._turns.clear()

    # -- the transport-neutral core

    async def handle(
        self, method: str, path: str, headers: Mapping[str, str], body: bytes
    ) -> WireResponse:
        """Answer one HTTP request: POST .../chat/completions, GET .../models."""
        route = path.split("?", 1)[0].rstrip("/")
        if route.endswith("/chat/completions"):
            if method.upper() != "POST":
                return _error_response(405, f"use POST for {route}, not {method}")
            return await self._complete(route, headers, body)
        if route.endswith("/models"):
            if method.upper() != "GET":
                return _error_response(405, f"use GET for {route}, not {method}")
            return self._model_list()
        return _error_response(
            404,
            f"the vfcheck scripted model serves POST .../chat/completions and "
            f"GET .../models, not {method} {path}",
        )

    async def _complete(self, route: str, headers: Mapping[str, str], body: bytes) -> WireResponse:
        try:
            payload = json.loads(body)
        except ValueError as error:
            return _error_response(400, f"the request body is not JSON: {error}")
        if not isinstance(payload, dict):
            return _error_response(400, "the request body must be a JSON object")
        lowered = {name.lower(): value for name, value in headers.items()}
        session_id = lowered.get(SESSION_ID_HEADER.lower())
        with self._lock:
            turn = self._turns.get(session_id, 0)
            self._turns[session_id] = turn + 1
        request = ModelRequest(
            body=payload,
            session_id=session_id,
            task=self.task_for(session_id),
            turn=turn,
            path=route,
            headers=lowered,
        )
        with self._lock:
            if request.model:
                self._model_ids.setdefault(request.model, None)
        reply = self._decide(request)
        if reply.fault_kind is Fault.HANG:
            self._record(RequestRecord(request, reply, None))
            await _hang_forever()
        response = _render(reply, request, self.seed, self.model_id)
        self._record(RequestRecord(request, reply, response.status))
        return response

    def _decide(self, request: ModelRequest) -> Reply:
        try:
            reply = self.policy(request)
        except Exception as error:
            logger.exception("scripted model policy failed on %s", request.path)
            return Reply.fault(
                Fault.STATUS,
                status=500,
                message=f"vfcheck scripted model: the policy raised "
                f"{type(error).__name__}: {error}",
            )
        return reply if reply is not None else Reply.text(_default_text(request, self.seed))

    def _record(self, record: RequestRecord) -> None:
        with self._lock:
            self._records.append(record)

    def _model_list(self) -> WireResponse:
        with self._lock:
            ids = list(self._model_ids)
        models = [
            Model(id=model_id, created=_CREATED, object="model", owned_by="vfcheck").model_dump()
            for model_id in ids
        ]
        body = json.dumps({"object": "list", "data": models}).encode()
        return WireResponse(200, {"content-type": _JSON_CONTENT_TYPE}, body)

    # -- transport 1: respx, in-process

    @contextmanager
    def mock(self, base_url: str | None = None) -> Iterator[str]:
        """Answer model traffic of every httpx client in this process; yields the base URL.

        POST .../chat/completions and GET .../models on any non-loopback host reach the
        model (so an in-env judge with its own base URL does too); loopback hosts pass
        through, because verifiers' interception server runs on 127.0.0.1 in this process.
        Anything else fails with respx's "not mocked" error. Async clients only.
        """
        url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        host = httpx.URL(url).host
        if _is_loopback(host):
            raise ValueError(
                f"mock(base_url={url!r}): loopback hosts pass through to real servers under "
                "the mock; use a non-loopback URL, or serve() for a real loopback server"
            )
        router = respx.MockRouter(assert_all_called=False, assert_all_mocked=True)
        router.route(host__regex=_LOOPBACK_HOST).pass_through()
        router.route(method="POST", path__regex=r"/chat/completions/?$").mock(
            side_effect=self._answer_httpx
        )
        router.route(method="GET", path__regex=r"/models/?$").mock(side_effect=self._answer_httpx)
        with router:
            yield url

    async def _answer_httpx(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        wire = await self.handle(request.method, request.url.path, request.headers, body)
        return httpx.Response(wire.status, headers=dict(wire.headers), content=wire.body)

    # -- transport 2: a real HTTP server on loopback

    @asynccontextmanager
    async def serve(self, host: str = "127.0.0.1", port: int = 0) -> AsyncIterator[str]:
        """Serve the model over HTTP on a loopback address; yields `http://HOST:PORT/v1`."""
        address = _loopback_address(host)
        family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        in_flight: set[asyncio.Task[Any]] = set()

        async def answer(request: web.Request) -> web.StreamResponse:
            task = asyncio.current_task()
            assert task is not None, "aiohttp runs each handler in a task"
            in_flight.add(task)
            try:
                return await self._answer_aiohttp(request)
            finally:
                in_flight.discard(task)

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", answer)
        runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((str(address), port))
            await runner.setup()
            await web.SockSite(runner, sock).start()
        except BaseException:
            sock.close()
            await runner.cleanup()
            raise
        bound_port = sock.getsockname()[1]
        netloc = f"[{address}]" if address.version == 6 else str(address)
        try:
            yield f"http://{netloc}:{bound_port}/v1"
        finally:
            # A hang would otherwise hold the shutdown for aiohttp's grace period.
            for task in list(in_flight):
                task.cancel()
            await runner.cleanup()

    async def _answer_aiohttp(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        wire = await self.handle(request.method, request.path, request.headers, body)
        if isinstance(wire.body, bytes):
            return web.Response(status=wire.status, headers=dict(wire.headers), body=wire.body)
        response = web.StreamResponse(status=wire.status, headers=dict(wire.headers))
        await response.prepare(request)
        async for event in wire.body:
            await response.write(event)
        await response.write_eof()
        return response


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _loopback_address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is None or not address.is_loopback:
        raise ValueError(
            f"the scripted model serves on a loopback address only (e.g. 127.0.0.1), "
            f"got host={host!r}"
        )
    return address


def serve_forever(
    model: ScriptedModel,
    port: int = 0,
    *,
    host: str = "127.0.0.1",
    announce: Callable[[str], None] | None = None,
) -> None:
    """Serve `model` until SIGINT/SIGTERM (`vfcheck mock-server`). On start, `announce` gets
    the base URL; by default it is printed alone on one line, for scripts to read."""
    asyncio.run(_serve_until_signal(model, host, port, announce or _print_line))


def _print_line(url: str) -> None:
    print(url, flush=True)


async def _serve_until_signal(
    model: ScriptedModel, host: str, port: int, announce: Callable[[str], None]
) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    handled: list[signal.Signals] = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(signum, stop.set)
            handled.append(signum)
        except (NotImplementedError, RuntimeError, ValueError):
            pass  # not the main thread, or no signal support: stop by cancellation
    try:
        async with model.serve(host, port) as url:
            announce(url)
            await stop.wait()
    finally:
        for signum in handled:
            loop.remove_signal_handler(signum)
