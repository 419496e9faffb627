"""Property-based tests (hypothesis) of the scripted model's wire format and the normaliser.

1. Whatever a `Reply` holds (any text, `data:` / `[DONE]` lookalikes, CR/LF runs, 10k+ chars,
   tool calls with invalid JSON arguments), verifiers' own upstream client and stream parser
   (`EvalClient.relay` + `ChatDialect().stream_parser()`, `EvalClient.get_response`) and the
   openai SDK (`ChatCompletion`, `ChatCompletionStreamState`) rebuild exactly that reply.
2. `vfcheck._traces.normalize`: scrubbing is idempotent, volatile values (ids, times, loopback
   ports, uuids) do not survive normalisation, `trace_diff` is empty on equal inputs and names the
   changed path otherwise, and the output is plain JSON.

Every test states its example count in a module constant (and its docstring); the whole file
stays well under a minute on a loaded 2-core CI machine.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, example, given, settings
from unit.test_fuzz import (
    CHAT_PATH,
    REPLIES,
    SESSION,
    USER,
    WIRE_EXAMPLES,
)

from vfcheck._model import (
    DEFAULT_BASE_URL,
    SESSION_ID_HEADER,
    Reply,
    ScriptedModel,
    ToolCall,
)

T = TypeVar("T")


# ------------------------------------------------------------------- verifiers + openai setup


@dataclass
class Wire:
    """One loop, one scripted model and long-lived clients, shared by every example."""

    loop: asyncio.AbstractEventLoop
    model: ScriptedModel
    current: list[Reply]
    upstream: Any  # verifiers.v1.clients.eval.EvalClient
    dialect: Any  # verifiers.v1.dialects.ChatDialect
    sampling: Any  # verifiers.v1.types.SamplingConfig
    openai: Any  # openai.AsyncOpenAI

    def run(self, make: Callable[[], Awaitable[T]]) -> T:
        return self.loop.run_until_complete(make())  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def wire() -> Iterator[Wire]:
    # verifiers costs seconds to import: only when a wire test runs, once per module.
    eval_client = pytest.importorskip("verifiers.v1.clients.eval")
    import openai
    from verifiers.v1.configs.client import EvalClientConfig
    from verifiers.v1.dialects import ChatDialect
    from verifiers.v1.types import SamplingConfig

    current: list[Reply] = []
    model = ScriptedModel(lambda request: current[0])
    loop = asyncio.new_event_loop()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("VFCHECK_FUZZ_API_KEY", "unused")
        upstream = eval_client.EvalClient(
            EvalClientConfig(base_url=DEFAULT_BASE_URL, api_key_var="VFCHECK_FUZZ_API_KEY")
        )
    api = openai.AsyncOpenAI(base_url=DEFAULT_BASE_URL, api_key="unused", max_retries=0)
    try:
        yield Wire(loop, model, current, upstream, ChatDialect(), SamplingConfig(), api)
    finally:
        loop.run_until_complete(upstream.close())
        loop.run_until_complete(api.close())
        loop.close()


@dataclass
class Seen:
    """What one reader rebuilt: content, (id, name, arguments) per call, finish reason."""

    content: str | None
    calls: list[tuple[str, str, str]]
    finish_reason: str | None


async def _direct_events(model: ScriptedModel, body: dict[str, Any]) -> list[bytes]:
    """The SSE events exactly as the model's transport-neutral core yields them."""
    model.reset()
    response = await model.handle(
        "POST", CHAT_PATH, {SESSION_ID_HEADER: SESSION}, json.dumps(body).encode()
    )
    assert not isinstance(response.body, bytes)
    return [event async for event in response.body]


async def _verifiers_stream(w: Wire, body: dict[str, Any]) -> tuple[Seen, list[bytes], Any]:
    """Relay through verifiers' EvalClient and assemble with its ChatStreamParser, as the
    interception server does (`_collect_stream`, verifiers/v1/interception/server.py)."""
    w.model.reset()
    relayed = await w.upstream.relay(w.dialect, dict(body), session_id=SESSION)
    parser = w.dialect.stream_parser()
    events: list[bytes] = []
    try:
        async for event in relayed.chunks:
            events.append(event)
            parser.feed(event)
    finally:
        await relayed.close()
    assert any(w.dialect.is_terminal_event(e) for e in events)
    response = parser.finish()
    return _seen_vf(response), events, response


async def _verifiers_plain(w: Wire, body: dict[str, Any]) -> Seen:
    w.model.reset()
    response = await w.upstream.get_response(w.dialect, dict(body), w.sampling, SESSION)
    return _seen_vf(response)


def _seen_vf(response: Any) -> Seen:
    calls = response.message.tool_calls or []
    return Seen(
        response.message.content,
        [(c.id, c.name, c.arguments) for c in calls],
        response.finish_reason,
    )


async def _openai_stream(w: Wire, body: dict[str, Any]) -> Seen:
    from openai.lib.streaming.chat import ChatCompletionStreamState

    w.model.reset()
    state: Any = ChatCompletionStreamState()
    stream = await w.openai.chat.completions.create(
        **body, extra_headers={SESSION_ID_HEADER: SESSION}
    )
    async for chunk in stream:
        state.handle_chunk(chunk)
    return _seen_openai(state.get_final_completion())


async def _openai_plain(w: Wire, body: dict[str, Any]) -> Seen:
    w.model.reset()
    completion = await w.openai.chat.completions.create(
        **body, extra_headers={SESSION_ID_HEADER: SESSION}
    )
    return _seen_openai(completion)


def _seen_openai(completion: Any) -> Seen:
    (choice,) = completion.choices
    calls = choice.message.tool_calls or []
    return Seen(
        choice.message.content,
        [(c.id, c.function.name, c.function.arguments) for c in calls],
        choice.finish_reason,
    )


def _expected_calls(reply: Reply, ids: list[str]) -> list[tuple[str, str, str]]:
    return [(ids[i], call.name, call.arguments) for i, call in enumerate(reply.tool_calls)]


# ------------------------------------------------------------------------ 1. the wire format


@settings(
    max_examples=WIRE_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(reply=REPLIES)
@example(reply=Reply(content="data: [DONE]\n\n", tool_calls=()))
@example(reply=Reply(content="", tool_calls=(ToolCall("f", "{bad json"),)))
@example(reply=Reply(content=None, tool_calls=(ToolCall("_", ""), ToolCall("g0", "[DONE]"))))
def test_verifiers_and_openai_rebuild_any_reply(wire: Wire, reply: Reply) -> None:
    """WIRE_EXAMPLES (60) replies. Each is answered streamed and plain, and read by:
    verifiers' `EvalClient.relay` + `ChatStreamParser`, verifiers' `EvalClient.get_response`,
    the openai SDK's stream accumulation (`ChatCompletionStreamState`) and its plain
    `ChatCompletion`. All of them must rebuild exactly the reply's content (verifiers maps ""
    to None by design), its tool calls (name, arguments byte-exact, id) and finish reason;
    the relay must cut the stream into exactly the events the model emitted."""
    wire.current[:] = [reply]
    stream_body = {"model": "m", "messages": USER, "stream": True}
    plain_body = {"model": "m", "messages": USER, "stream": False}
    with wire.model.mock():
        direct = wire.run(lambda: _direct_events(wire.model, stream_body))
        vf_stream, relayed, vf_response = wire.run(lambda: _verifiers_stream(wire, stream_body))
        vf_plain = wire.run(lambda: _verifiers_plain(wire, plain_body))
        sdk_stream = wire.run(lambda: _openai_stream(wire, stream_body))
        sdk_plain = wire.run(lambda: _openai_plain(wire, plain_body))
    assert [r.request.stream for r in wire.model.requests] == [False]

    # SSE framing: verifiers' relay splits the byte stream back into the model's events.
    assert relayed == direct
    assert direct[-1] == b"data: [DONE]\n\n"
    assert all(event.startswith(b"data: ") and event.endswith(b"\n\n") for event in direct)
    assert vf_response.usage is not None

    # Call ids: the scripted ones, else derived; the same for a streamed and a plain answer.
    ids = [call for call, _, _ in sdk_plain.calls]
    for call, derived in zip(reply.tool_calls, ids, strict=True):
        if call.id is not None:
            assert derived == call.id
        else:
            assert re.fullmatch(r"call_[0-9a-f]{24}", derived)
    calls = _expected_calls(reply, ids)

    vf_expected = Seen(reply.content or None, calls, reply.finish_reason)
    assert vf_stream == vf_expected
    assert vf_plain == vf_expected
    sdk_expected = Seen(reply.content, calls, reply.finish_reason)
    assert sdk_plain == sdk_expected
    assert sdk_stream == sdk_expected
