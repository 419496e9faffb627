"""The scripted model, driven through both transports (respx in-process, a loopback
server in a thread) with the openai client."""

from __future__ import annotations

import asyncio
import json
import sys
import time
import types
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import httpx
import openai
import pytest
from aiohttp import web

from vfcheck._model import (
    DEFAULT_MODEL_ID,
    HUGE_REPLY_CHARS,
    SESSION_ID_HEADER,
    EpisodeRef,
    Fault,
    ModelRequest,
    PolicyRouter,
    Reply,
    ScriptedModel,
    TaskRef,
    ToolCall,
    agent_only,
    default_reply,
    first_of,
    fixed,
    from_function,
    generate_arguments,
    judge_only,
    per_task,
    sequence,
    takes_arguments,
    tool_policy,
)

Endpoint = Callable[[ScriptedModel], AbstractAsyncContextManager[str]]


USER: list[Any] = [{"role": "user", "content": "say hello"}]


WEATHER_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


@pytest.fixture(params=["respx", "loopback"])
def endpoint(request: pytest.FixtureRequest) -> Endpoint:
    """Open a model on one transport: the in-process respx mock or the 127.0.0.1 server."""

    @asynccontextmanager
    async def open_endpoint(model: ScriptedModel) -> AsyncIterator[str]:
        if request.param == "respx":
            with model.mock() as url:
                yield url
        else:
            async with model.serve() as url:
                yield url

    return open_endpoint


def client(base_url: str, headers: dict[str, str] | None = None) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        base_url=base_url, api_key="unused", max_retries=0, default_headers=headers
    )


async def complete(base_url: str, *, headers: dict[str, str] | None = None, **kwargs: Any) -> Any:
    """One non-streamed chat completion through a fresh (and closed) OpenAI client."""
    async with client(base_url, headers) as api:
        return await api.chat.completions.create(**kwargs)


async def stream_chunks(
    base_url: str, *, headers: dict[str, str] | None = None, **kwargs: Any
) -> list[Any]:
    async with client(base_url, headers) as api:
        stream = await api.chat.completions.create(
            model="m", messages=kwargs.pop("messages", USER), stream=True, **kwargs
        )
        return [chunk async for chunk in stream]


def reassemble(chunks: list[Any]) -> dict[str, Any]:
    """What a client rebuilds from OpenAI stream deltas."""
    content: list[str] = []
    calls: dict[int, dict[str, str]] = {}
    finish = None
    for chunk in chunks:
        for choice in chunk.choices:
            finish = choice.finish_reason or finish
            content.append(choice.delta.content or "")
            for call in choice.delta.tool_calls or []:
                slot = calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                slot["id"] = call.id or slot["id"]
                if call.function is not None:
                    slot["name"] += call.function.name or ""
                    slot["arguments"] += call.function.arguments or ""
    return {"content": "".join(content), "tool_calls": calls, "finish_reason": finish}


async def test_plain_completion_through_openai_client(endpoint: Endpoint) -> None:
    model = ScriptedModel(fixed("hello there"))
    async with endpoint(model) as url:
        completion = await complete(url, model="m", messages=USER)
    assert completion.object == "chat.completion"
    assert completion.choices[0].message.content == "hello there"
    assert completion.choices[0].finish_reason == "stop"
    assert completion.model == "m"
    assert completion.usage is not None and completion.usage.total_tokens > 0


async def test_stream_ends_with_usage_chunk_and_reassembles(endpoint: Endpoint) -> None:
    text = "a streamed reply that is long enough to need several deltas " * 3
    model = ScriptedModel(fixed(text))
    async with endpoint(model) as url:
        chunks = await stream_chunks(url)
    assert len(chunks) > 3
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert reassemble(chunks) == {"content": text, "tool_calls": {}, "finish_reason": "stop"}


async def test_raw_sse_is_data_events_ending_in_done(endpoint: Endpoint) -> None:
    model = ScriptedModel(fixed("hi"))
    async with endpoint(model) as url, httpx.AsyncClient() as http:
        response = await http.post(
            f"{url}/chat/completions", json={"model": "m", "messages": USER, "stream": True}
        )
    assert response.headers["content-type"].startswith("text/event-stream")
    events = response.text.split("\n\n")
    assert events[-2:] == ["data: [DONE]", ""]
    payloads = [json.loads(event.removeprefix("data: ")) for event in events[:-2]]
    assert all(p["object"] == "chat.completion.chunk" for p in payloads)
    assert payloads[-1]["choices"] == [] and set(payloads[-1]["usage"]) >= {
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
    }


async def test_tool_call_streams_like_openai_and_matches_plain_reply(endpoint: Endpoint) -> None:
    reply = Reply.tool("get_weather", {"city": "Paris", "days": [1, 2, 3], "detail": "x" * 80})
    model = ScriptedModel(fixed(reply))
    async with endpoint(model) as url:
        chunks = await stream_chunks(url, tools=[WEATHER_TOOL])
        plain = await complete(url, model="m", messages=USER, tools=[WEATHER_TOOL])
    headers = [
        call
        for chunk in chunks
        for choice in chunk.choices
        for call in choice.delta.tool_calls or []
        if call.id
    ]
    assert len(headers) == 1
    header = headers[0]
    assert (header.index, header.type, header.function.name) == (0, "function", "get_weather")
    assert header.function.arguments == ""
    argument_deltas = [
        c
        for c in chunks
        if c.choices and c.choices[0].delta.tool_calls and not c.choices[0].delta.tool_calls[0].id
    ]
    assert len(argument_deltas) > 1  # arguments arrive in pieces, as from OpenAI
    streamed = reassemble(chunks)
    assert streamed["finish_reason"] == "tool_calls"
    call = streamed["tool_calls"][0]
    assert json.loads(call["arguments"]) == {"city": "Paris", "days": [1, 2, 3], "detail": "x" * 80}

    message = plain.choices[0].message
    assert plain.choices[0].finish_reason == "tool_calls"
    assert message.content is None and message.tool_calls is not None
    plain_call = message.tool_calls[0]
    assert plain_call.type == "function"
    assert (plain_call.function.name, plain_call.function.arguments) == (
        call["name"],
        call["arguments"],
    )


async def test_raw_invalid_arguments_are_sent_as_is(endpoint: Endpoint) -> None:
    model = ScriptedModel(fixed(Reply.tool("get_weather", '{"city": "Par')))
    async with endpoint(model) as url:
        streamed = reassemble(await stream_chunks(url, tools=[WEATHER_TOOL]))
        plain = await complete(url, model="m", messages=USER)
    assert streamed["tool_calls"][0]["arguments"] == '{"city": "Par'
    assert plain.choices[0].message.tool_calls[0].function.arguments == '{"city": "Par'


async def test_several_tool_calls_and_content_in_one_reply(endpoint: Endpoint) -> None:
    reply = Reply(
        content="calling two tools",
        tool_calls=(ToolCall("a", '{"x":1}'), ToolCall("b", "{}", id="call_fixed")),
    )
    async with endpoint(ScriptedModel(fixed(reply))) as url:
        streamed = reassemble(await stream_chunks(url))
    assert streamed["content"] == "calling two tools"
    assert [c["name"] for c in streamed["tool_calls"].values()] == ["a", "b"]
    assert streamed["tool_calls"][1]["id"] == "call_fixed"
    assert streamed["tool_calls"][0]["id"].startswith("call_")


async def test_models_lists_default_and_requested_ids(endpoint: Endpoint) -> None:
    model = ScriptedModel(model_id="scripted-a")
    async with endpoint(model) as url:
        await complete(url, model="asked-for", messages=USER)
        async with client(url) as api:
            models = await api.models.list()
        async with httpx.AsyncClient() as http:
            raw = (await http.get(f"{url}/models")).json()
    assert [m.id for m in models.data] == ["scripted-a", "asked-for"]
    assert raw["object"] == "list" and raw["data"][0]["object"] == "model"


async def test_unknown_path_and_bad_body_get_openai_errors(endpoint: Endpoint) -> None:
    async with endpoint(ScriptedModel()) as url, httpx.AsyncClient() as http:
        if "127.0.0.1" in url:  # respx routes only the model paths; the server sees all
            missing = await http.post(f"{url}/embeddings", json={})
            assert missing.status_code == 404
            assert "chat/completions" in missing.json()["error"]["message"]
        bad = await http.post(f"{url}/chat/completions", content=b"{not json")
    assert bad.status_code == 400 and "not JSON" in bad.json()["error"]["message"]


@pytest.mark.parametrize(
    ("status", "error_type"),
    [
        (429, openai.RateLimitError),
        (500, openai.InternalServerError),
        (503, openai.InternalServerError),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
async def test_status_fault_reaches_client_as_that_status(
    endpoint: Endpoint, status: int, error_type: type[openai.APIStatusError], stream: bool
) -> None:
    model = ScriptedModel(fixed(Reply.fault("status", status=status)))
    async with endpoint(model) as url:
        with pytest.raises(error_type) as caught:
            await complete(url, model="m", messages=USER, stream=stream)
    assert caught.value.status_code == status
    body = caught.value.body
    assert isinstance(body, dict) and set(body) >= {"message", "type", "param", "code"}
    assert model.requests[-1].status == status


async def test_malformed_fault_is_a_parse_error(endpoint: Endpoint) -> None:
    model = ScriptedModel(fixed(Reply.fault(Fault.MALFORMED)))
    async with endpoint(model) as url:
        with pytest.raises(json.JSONDecodeError):
            await complete(url, model="m", messages=USER)
        with pytest.raises(json.JSONDecodeError):
            await stream_chunks(url)
    assert [r.status for r in model.requests] == [200, 200]


async def test_cut_stream_ends_without_finish_or_done(endpoint: Endpoint) -> None:
    model = ScriptedModel(fixed(Reply.fault("cut")))
    async with endpoint(model) as url:
        chunks = await stream_chunks(url)
        async with httpx.AsyncClient() as http:
            raw = await http.post(
                f"{url}/chat/completions", json={"messages": USER, "stream": True}
            )
            plain = await http.post(f"{url}/chat/completions", json={"messages": USER})
    assert chunks, "a cut stream still sends its first deltas"
    assert reassemble(chunks)["finish_reason"] is None
    assert all(chunk.usage is None for chunk in chunks)
    assert raw.status_code == 200 and "[DONE]" not in raw.text
    assert 'finish_reason":"stop' not in raw.text
    with pytest.raises(json.JSONDecodeError):
        json.loads(plain.content)  # a plain reply is truncated halfway


async def test_hang_is_cancelled_by_a_timeout(endpoint: Endpoint) -> None:
    model = ScriptedModel(sequence(Reply.fault("hang"), "after the hang"))
    async with endpoint(model) as url:
        # the model must hold the request before the clock starts: on a loaded machine 0.3 s
        # can pass before it arrives, and the next request would then get the hang
        hung = asyncio.create_task(complete(url, model="m", messages=USER, stream=True))
        while not model.requests:
            await asyncio.sleep(0.01)
        started = time.perf_counter()
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(hung, 0.3)
        assert time.perf_counter() - started < 2
        # The model still answers after a hang was abandoned.
        later = await asyncio.wait_for(complete(url, model="m", messages=USER), 60)
    assert later.choices[0].message.content == "after the hang"
    assert [(r.reply.fault_kind, r.status) for r in model.requests] == [
        (Fault.HANG, None),
        (None, 200),
    ]


async def test_serve_exits_promptly_while_a_request_hangs() -> None:
    model = ScriptedModel(fixed(Reply.fault("hang")))
    async with model.serve() as url:
        pending = asyncio.create_task(complete(url, model="m", messages=USER))
        while not model.requests:
            await asyncio.sleep(0.01)
        started = time.perf_counter()
    assert time.perf_counter() - started < 2
    with pytest.raises(openai.APIError):
        await asyncio.wait_for(pending, 5)


async def test_empty_and_huge_replies(endpoint: Endpoint) -> None:
    model = ScriptedModel(
        sequence(Reply.fault("empty"), Reply.fault("huge"), Reply.fault("huge", size=1234))
    )
    async with endpoint(model) as url:
        empty = reassemble(await stream_chunks(url))
        huge = reassemble(await stream_chunks(url))
        sized = await complete(url, model="m", messages=USER)
    assert empty == {"content": "", "tool_calls": {}, "finish_reason": "stop"}
    assert len(huge["content"]) == HUGE_REPLY_CHARS == 100_000
    assert huge["finish_reason"] == "stop"
    assert len(sized.choices[0].message.content or "") == 1234


def test_reply_rejects_inconsistent_shapes() -> None:
    with pytest.raises(ValueError, match="4xx/5xx"):
        Reply.fault("status", status=200)
    with pytest.raises(ValueError, match="needs fault_kind"):
        Reply(content="x", status=500)
    with pytest.raises(ValueError, match="needs content"):
        Reply()
    with pytest.raises(ValueError):
        Reply.fault("explode")


async def test_policy_exception_is_a_500_naming_the_error(endpoint: Endpoint) -> None:
    def broken(request: ModelRequest) -> Reply:
        raise KeyError("no such task")

    model = ScriptedModel(broken)
    async with endpoint(model) as url:
        with pytest.raises(openai.InternalServerError, match="policy raised KeyError"):
            await complete(url, model="m", messages=USER)


async def test_a_policy_hit_by_the_ast_thread_race_is_asked_once_more(
        endpoint: Endpoint) -> None:
    """CPython 3.11/3.12's spurious `SystemError` when another thread parses an AST at the
    same time (hypothesis' search beside fuzz's plays) is no policy failure; any other
    `SystemError` is."""
    calls: list[int] = []

    def racing(request: ModelRequest) -> Reply:
        calls.append(1)
        if len(calls) == 1:
            raise SystemError("AST constructor recursion depth mismatch (before=40, after=12)")
        return Reply.text("answered")

    def broken(request: ModelRequest) -> Reply:
        raise SystemError("something else")

    for policy, expected in ((racing, "answered"), (broken, None)):
        model = ScriptedModel(policy)
        async with endpoint(model) as url:
            if expected is None:
                with pytest.raises(openai.InternalServerError, match="raised SystemError"):
                    await complete(url, model="m", messages=USER)
            else:
                reply = await complete(url, model="m", messages=USER)
                assert reply.choices[0].message.content == expected and len(calls) == 2


async def test_loopback_passes_through_while_mocked() -> None:
    async def pong(request: web.Request) -> web.Response:
        return web.Response(text="pong from a real server")

    app = web.Application()
    app.router.add_get("/v1/models", pong)  # a path the mock would answer on other hosts
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    model = ScriptedModel()
    try:
        with model.mock() as url:
            async with httpx.AsyncClient() as http:
                real = await http.get(f"http://127.0.0.1:{port}/v1/models")
                mocked = await http.get(f"{url}/models")
    finally:
        await runner.cleanup()
    assert real.text == "pong from a real server"
    assert mocked.json()["data"][0]["id"] == DEFAULT_MODEL_ID


async def test_served_model_is_reachable_under_the_respx_mock() -> None:
    model = ScriptedModel(fixed("over loopback"))
    async with model.serve() as served_url:
        with model.mock():
            completion = await complete(served_url, model="m", messages=USER)
    assert completion.choices[0].message.content == "over loopback"


async def test_any_non_loopback_host_reaches_the_mock_and_others_fail() -> None:
    model = ScriptedModel(fixed("judged"))
    with model.mock("http://upstream.example.invalid/v1"):
        completion = await complete(
            "https://judge.example.invalid/api/v1", model="judge", messages=USER
        )
        async with httpx.AsyncClient() as http:  # env code's own request: refused, in
            with pytest.raises(httpx.ConnectError, match="vfcheck runs offline"):  # our words
                await http.get("http://other.example.invalid/v1/files")
    assert completion.choices[0].message.content == "judged"


def test_mock_and_serve_refuse_wrong_hosts() -> None:
    with pytest.raises(ValueError, match="loopback"), ScriptedModel().mock("http://127.0.0.1/v1"):
        pass

    async def serve_everywhere() -> None:
        async with ScriptedModel().serve(host="0.0.0.0"):
            pass

    with pytest.raises(ValueError, match="loopback address only"):
        asyncio.run(serve_everywhere())


async def test_session_header_binds_task_and_counts_turns(endpoint: Endpoint) -> None:
    lookups: list[str] = []

    def task_of(session_id: str) -> TaskRef | None:
        lookups.append(session_id)
        return TaskRef(index=7, key="looked-up") if session_id == "trace-b" else None

    model = ScriptedModel(
        from_function(lambda r: f"{r.task.key if r.task else None}@{r.turn}"), task_of=task_of
    )
    model.bind("trace-a", TaskRef(index=0, key="echo:0"))
    async with endpoint(model) as url:
        answers = []
        for session in ("trace-a", "trace-b", "trace-a", "trace-c"):
            completion = await complete(
                url, headers={SESSION_ID_HEADER: session}, model="m", messages=USER
            )
            answers.append(completion.choices[0].message.content)
    assert answers == ["echo:0@0", "looked-up@0", "echo:0@1", "None@0"]
    assert "trace-a" not in lookups  # a bound session is never looked up
    records = model.requests
    assert [r.request.session_id for r in records] == ["trace-a", "trace-b", "trace-a", "trace-c"]
    assert records[0].request.task == TaskRef(0, "echo:0")
    assert records[0].request.path.endswith("/v1/chat/completions")


async def test_request_log_under_concurrency(endpoint: Endpoint) -> None:
    model = ScriptedModel(from_function(lambda r: f"{r.session_id}:{r.turn}"))

    async with endpoint(model) as url:

        async def episode(session: str) -> list[str | None]:
            answers = []
            async with client(url, {SESSION_ID_HEADER: session}) as api:
                for _ in range(3):
                    stream: Any = await api.chat.completions.create(
                        model="m", messages=USER, stream=True
                    )
                    answers.append(reassemble([chunk async for chunk in stream])["content"])
            return answers

        results = await asyncio.gather(*(episode(f"s{i}") for i in range(10)))
    assert results == [[f"s{i}:{t}" for t in range(3)] for i in range(10)]
    records = model.requests
    assert len(records) == 30
    assert all(r.status == 200 and r.request.stream for r in records)
    assert records[0].reply == Reply.text(records[0].reply.content or "")
    model.reset()
    assert model.requests == []


def request_with(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, **fields: Any
) -> ModelRequest:
    return ModelRequest(body={"messages": messages, "tools": tools or []}, **fields)


def function_tool(name: str, parameters: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": parameters or {}}}


def assistant_call(name: str) -> dict[str, Any]:
    call = {"id": f"call_{name}", "type": "function", "function": {"name": name, "arguments": "{}"}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def test_default_reply_echoes_answers_tool_results_and_is_deterministic() -> None:
    policy = default_reply(seed=0)
    echo = request_with([{"role": "system", "content": "s"}, {"role": "user", "content": "ping"}])
    assert policy(echo) == Reply.text("ping")
    parts = request_with(
        [
            {
                "role": "user",
                "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            }
        ]
    )
    assert policy(parts) == Reply.text("ab")
    after_tool = request_with(
        [USER[0], assistant_call("t"), {"role": "tool", "tool_call_id": "x", "content": "42"}]
    )
    assert policy(after_tool) == Reply.text("42")

    no_user = request_with([{"role": "system", "content": "only a system prompt"}])
    first = policy(no_user)
    assert first == default_reply(seed=0)(request_with(list(no_user.messages)))
    assert first is not None and (first.content or "").startswith("scripted reply ")
    assert default_reply(seed=1)(no_user) != first


def test_generated_arguments_follow_the_schema_and_are_deterministic() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 12, "maxLength": 20},
            "count": {"type": "integer", "minimum": 3, "maximum": 5},
            "ratio": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
            "flag": {"type": "boolean"},
            "mode": {"enum": ["fast", "slow"]},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
            "when": {"type": "string", "format": "date"},
            "maybe": {"anyOf": [{"type": "null"}, {"type": "integer"}]},
            "nested": {"$ref": "#/$defs/Inner"},
            "optional": {"type": "string"},
        },
        "required": ["name", "count", "ratio", "flag", "mode", "tags", "when", "maybe", "nested"],
        "$defs": {
            "Inner": {
                "type": "object",
                "properties": {"depth": {"type": "integer"}, "path": {"type": "string"}},
            }
        },
    }
    arguments = generate_arguments(schema, seed=3, tool_name="tool")
    jsonschema.validate(arguments, schema)
    assert set(arguments) == set(schema["required"])  # required only, when listed
    assert set(arguments["nested"]) == {"depth", "path"}  # all, when none is required
    assert arguments == generate_arguments(schema, seed=3, tool_name="tool")
    variants = {
        json.dumps(generate_arguments(schema, seed=seed, tool_name=name))
        for seed in range(3)
        for name in ("a", "b")
    }
    assert len(variants) > 1
    assert generate_arguments({}, seed=0) == {}


def test_takes_arguments_reads_properties_through_refs_and_unions() -> None:
    assert not takes_arguments({})
    assert not takes_arguments({"type": "object", "properties": {}})  # verifiers' `bump()`
    assert takes_arguments({"type": "object", "properties": {"a": {"type": "integer"}}})
    assert takes_arguments({"$ref": "#/$defs/A",
                            "$defs": {"A": {"properties": {"x": {"type": "string"}}}}})
    assert takes_arguments({"anyOf": [{}, {"properties": {"x": {}}}]})


def test_tool_policy_calls_each_env_tool_once_from_history() -> None:
    tools = [
        function_tool("bash"),
        function_tool("echo_back", WEATHER_TOOL["function"]["parameters"]),
        function_tool("add"),
    ]
    policy = tool_policy(then=fixed("done"), seed=0)

    first = policy(request_with(USER, tools))
    assert first is not None and [c.name for c in first.tool_calls] == ["echo_back"]
    assert set(json.loads(first.tool_calls[0].arguments)) == {"city"}
    assert first.finish_reason == "tool_calls"

    second = policy(request_with([*USER, assistant_call("echo_back")], tools))
    assert second is not None and [c.name for c in second.tool_calls] == ["add"]

    done = policy(request_with([*USER, assistant_call("echo_back"), assistant_call("add")], tools))
    assert done == Reply.text("done")

    # Built-ins are configurable: with an empty denylist, bash is the env's too.
    everything = tool_policy(then=fixed("done"), builtins=frozenset())
    called = everything(request_with(USER, tools))
    assert called is not None and called.tool_calls[0].name == "bash"


async def test_default_model_policy_solves_a_tool_episode(endpoint: Endpoint) -> None:
    tools = [function_tool("bash"), WEATHER_TOOL]
    # an agent turn carries verifiers' session header; one without it is a judge call
    agent = {SESSION_ID_HEADER: "trace-agent"}
    async with endpoint(ScriptedModel(seed=5)) as url:
        first = await complete(url, headers=agent, model="m", messages=USER, tools=tools)
        call = first.choices[0].message.tool_calls[0]
        history = [
            *USER,
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": "sunny"},
        ]
        final = await complete(url, headers=agent, model="m", messages=history, tools=tools)
    assert call.function.name == "get_weather"
    assert final.choices[0].message.content == "sunny"


def test_sequence_per_task_and_first_of() -> None:
    steps = sequence("one", Reply.fault("empty"), "last")
    assert [steps(request_with(USER, turn=t)) for t in range(5)] == [
        Reply.text("one"),
        Reply.fault("empty"),
        *[Reply.text("last")] * 3,
    ]
    with pytest.raises(ValueError):
        sequence()

    routed = per_task({0: fixed("by index"), "k": fixed("by key")})
    assert routed(request_with(USER, task=TaskRef(0, None))) == Reply.text("by index")
    assert routed(request_with(USER, task=TaskRef(0, "k"))) == Reply.text("by key")
    assert routed(request_with(USER, task=TaskRef(1, "other"))) is None
    assert routed(request_with(USER)) is None

    chained = first_of(routed, fixed("fallback"))
    assert chained(request_with(USER)) == Reply.text("fallback")
    assert chained(request_with(USER, task=TaskRef(0, None))) == Reply.text("by index")


async def test_policy_without_opinion_falls_to_default() -> None:
    model = ScriptedModel(per_task({"listed": fixed("scripted")}))
    model.bind("s1", TaskRef(None, "listed"))
    body = json.dumps({"messages": USER}).encode()
    listed = await model.handle("POST", "/v1/chat/completions", {SESSION_ID_HEADER: "s1"}, body)
    # an unbound session (no header would make it a judge call, answered with a verdict)
    other = await model.handle("POST", "/v1/chat/completions", {SESSION_ID_HEADER: "s2"}, body)
    assert isinstance(listed.body, bytes) and isinstance(other.body, bytes)
    assert json.loads(listed.body)["choices"][0]["message"]["content"] == "scripted"
    assert json.loads(other.body)["choices"][0]["message"]["content"] == "say hello"


async def test_same_request_same_bytes() -> None:
    body = json.dumps({"messages": USER, "stream": True}).encode()

    async def answer() -> bytes:
        wire = await ScriptedModel(seed=1).handle(
            "POST", "/v1/chat/completions", {SESSION_ID_HEADER: "t"}, body
        )
        assert not isinstance(wire.body, bytes)
        return b"".join([event async for event in wire.body])

    assert await answer() == await answer()


async def test_a_request_without_model_is_answered_as_the_model_id() -> None:
    model = ScriptedModel(model_id="named")
    wire = await model.handle(
        "POST", "/v1/chat/completions", {}, json.dumps({"messages": USER}).encode()
    )
    assert isinstance(wire.body, bytes) and json.loads(wire.body)["model"] == "named"


def test_a_routed_policy_with_no_opinion_leaves_the_request_to_the_script() -> None:
    """A fault meant for the agent leaves the judge to the script's answer, and a one-turn
    fault the later turns to the script's turns (`PolicyRouter`)."""
    script = first_of(judge_only(fixed("scripted verdict")), fixed("scripted turn"))
    router = PolicyRouter(base=script)
    router.assigned["t1"] = agent_only(fixed(Reply.fault("empty")))
    router.assigned["t2"] = agent_only(
        lambda r: Reply.text("bad first turn") if r.turn == 0 else None)
    judged = request_with(USER, kind="judge", episode=EpisodeRef(TaskRef(0), ["t1"]))
    assert router(judged) == Reply.text("scripted verdict")
    assert router(request_with(USER, session_id="t1")) == Reply.fault("empty")
    assert router(request_with(USER, session_id="t2")) == Reply.text("bad first turn")
    assert router(request_with(USER, session_id="t2", turn=1)) == Reply.text("scripted turn")
    assert PolicyRouter()(judged) is None  # no script: the model's default answers


async def test_a_judge_call_outside_any_scope_belongs_to_the_bound_trace_it_scores(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An env server's rollouts run in a context of their own, so no `episode_scope`
    reaches their judge calls: the trace being scored, found on the call's stack, ties the
    call to its task, and the script's answer for that task applies."""
    class Trace:
        def __init__(self, trace_id: str) -> None:
            self.id = trace_id

    module = types.ModuleType("verifiers.v1.trace")
    module.Trace = Trace  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "verifiers.v1.trace", module)
    model = ScriptedModel(per_task({1: judge_only(fixed("task 1's judge reply"))}))
    model.bind("served-trace", TaskRef(1, "k1"))
    body = json.dumps({"messages": USER}).encode()

    async def score(trace: Trace) -> Any:  # a reward holding the trace it scores
        return await model.handle("POST", "/v1/chat/completions", {}, body)

    answered = await score(Trace("served-trace"))
    unknown = await score(Trace("never-bound"))
    assert isinstance(answered.body, bytes) and isinstance(unknown.body, bytes)
    assert json.loads(answered.body)["choices"][0]["message"]["content"] == (
        "task 1's judge reply")
    first, second = model.judge_calls
    assert first.request.task == TaskRef(1, "k1")
    assert first.request.episode is not None
    assert first.request.episode.trace_ids == ["served-trace"]
    assert second.request.task is None  # not bound: the model's default verdict
