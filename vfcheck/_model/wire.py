"""OpenAI's chat-completions wire format: SSE chunks, JSON bodies, errors, usage.

Payloads are built from the `openai` package's types so the format is the real one; ids,
`created` and token counts are deterministic so that traces can be compared.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Literal

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

from vfcheck._model.types import Fault, ModelRequest, Reply, ToolCall, WireResponse, stable_digest

CREATED = 0
"""A fixed `created` keeps the wire bytes of a reply reproducible."""
JSON_CONTENT_TYPE = "application/json"
_SSE_CONTENT_TYPE = "text/event-stream; charset=utf-8"
_MALFORMED_BODY = b"<html><body><h1>502 Bad Gateway</h1> scripted garbage {{{</body></html>"
_CUT_TEXT = "this reply is cut off before it ends, and before any finish_reason"
_HUGE_UNIT = "scripted huge reply. "


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


def error_response(status: int, message: str) -> WireResponse:
    return WireResponse(status, {"content-type": JSON_CONTENT_TYPE}, _error_body(status, message))


def _content_of(reply: Reply) -> str | None:
    if reply.fault_kind is Fault.EMPTY:
        return ""
    if reply.fault_kind is Fault.HUGE:
        repeats = reply.size // len(_HUGE_UNIT) + 1
        return (_HUGE_UNIT * repeats)[: reply.size]
    return reply.content


MAX_DELTAS = 16
"""Stream deltas of one text at most, however long it is. Every delta costs the receiving
side the same (verifiers' interception server forwards it, the openai SDK rebuilds its
snapshot models from it: ~0.3 ms of CPU each), so 256 deltas made a 100 kB reply's episode
5x a normal one's; 16 make it 2x, and still stream the text in pieces."""


def _pieces(text: str) -> list[str]:
    """Split text into stream deltas of at least 16 characters, at most `MAX_DELTAS`."""
    size = max(16, -(-len(text) // MAX_DELTAS))
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
        session = request.session_id or stable_digest(json.dumps(request.messages, default=str))
        call_ids = tuple(
            call.id or f"call_{stable_digest(seed, session, request.turn, i, call.name)[:24]}"
            for i, call in enumerate(reply.tool_calls)
        )
        completion_id = f"chatcmpl-{stable_digest(seed, session, request.turn)[:24]}"
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
                created=CREATED,
                model=self.model,
                choices=[choice],
            )
        )

    def usage_chunk(self, completion: str) -> bytes:
        return self._event(
            ChatCompletionChunk(
                id=self.completion_id,
                object="chat.completion.chunk",
                created=CREATED,
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
            created=CREATED,
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


def render(reply: Reply, request: ModelRequest, seed: int, model: str) -> WireResponse:
    """The HTTP response for a (non-hang) reply, streamed iff the request asked for it;
    `model` names the model when the request does not."""
    fault = reply.fault_kind
    if fault is Fault.STATUS:
        return error_response(reply.status, reply.message or "")
    sse = {"content-type": _SSE_CONTENT_TYPE, "cache-control": "no-cache"}
    plain = {"content-type": JSON_CONTENT_TYPE}
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


def model_list(ids: Sequence[str]) -> WireResponse:
    """`GET /models`: every model id the scripted model answered to, as OpenAI lists them."""
    models = [
        Model(id=model_id, created=CREATED, object="model", owned_by="vfcheck").model_dump()
        for model_id in ids
    ]
    body = json.dumps({"object": "list", "data": models}).encode()
    return WireResponse(200, {"content-type": JSON_CONTENT_TYPE}, body)
