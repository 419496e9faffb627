"""How the scripted model is reached: a respx router in this process, or a loopback server.

Both transports hand each request to `ScriptedModelCore.handle` and move its `WireResponse`
bytes; neither decides anything. verifiers' interception server forwards every model
request upstream with a plain `httpx.AsyncClient` (`verifiers/v1/clients/eval.py`), so the
respx router answers it in-process (`ScriptedModel.mock`); `ScriptedModel.serve` and
`serve_forever` put the same model on 127.0.0.1 for `vf-eval` in another process.
"""

from __future__ import annotations

import asyncio
import ipaddress
import signal
import socket
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx
import respx
from aiohttp import web
from respx.patterns import Pattern

from vfcheck._model.core import ScriptedModelCore
from vfcheck._shared.this_machine import is_this_machine

DEFAULT_BASE_URL = "http://scripted-model.vfcheck.invalid/v1"
"""Unresolvable on purpose: only the mock can answer it."""


class ScriptedModel(ScriptedModelCore):
    """An OpenAI-compatible model whose answers come from a policy, with a request log,
    reachable in-process (`mock`) or over HTTP on loopback (`serve`).

    `policy` None is the built-in default: the positive verdict for judge calls, then
    `tool_policy(then=default_reply(seed), seed)`; a given policy that has no opinion
    (returns None) falls through to that default. The task of an agent turn comes from its
    `X-Session-ID` header: a session `bind`-ed by the runner (from `on_trace`), else
    `task_of(session_id)`; a judge call's from the `episode_scope` it was made in.
    """

    # -- transport 1: respx, in-process

    @contextmanager
    def mock(self, base_url: str | None = None) -> Iterator[str]:
        """Answer model traffic of every httpx client in this process; yields the base URL.

        POST .../chat/completions and GET .../models on any host not on this machine reach
        the model (so an in-env judge with its own base URL does too); this machine's hosts
        (`vfcheck._shared.this_machine`) pass through, because verifiers' interception server runs
        on 127.0.0.1 in this process.
        Anything else is env code's own request: the script's `[[http]]` entries answer it,
        or it is refused in the user's terms and logged (`vfcheck._model.offline_http`).
        """
        url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        host = httpx.URL(url).host
        if is_this_machine(host):
            raise ValueError(
                f"mock(base_url={url!r}): this machine's hosts pass through to real servers under "
                "the mock; use a non-loopback URL, or serve() for a real loopback server"
            )
        router = respx.MockRouter(assert_all_called=False, assert_all_mocked=True)
        router.route(ToThisMachine(True)).pass_through()  # as the socket guard does
        router.route(method="POST", path__regex=r"/chat/completions/?$").mock(
            side_effect=self._answer_httpx
        )
        router.route(method="GET", path__regex=r"/models/?$").mock(side_effect=self._answer_httpx)
        router.route().mock(side_effect=self.http.respond)  # env code's own requests
        with router:
            yield url

    async def _answer_httpx(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        wire = await self.handle(request.method, request.url.path, request.headers, body)
        return httpx.Response(wire.status, headers=dict(wire.headers), content=wire.body)

    # -- transport 2: a real HTTP server on loopback

    @asynccontextmanager
    async def serve(self, host: str = "127.0.0.1", port: int = 0) -> AsyncIterator[str]:
        """Serve the model over HTTP on a loopback address; yields `http://HOST:PORT/v1`.

        A judge call reaching it is a judge call of no episode: the server's tasks do not
        run in the caller's `episode_scope` (the respx mock's side effect does)."""
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


_FORWARDING: list[respx.MockRouter] = []
"""The router `forward_model` started in this process (it lives as long as the process)."""
DROPPED_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection"})


def forward_model(url: str) -> None:
    """In a process of its own below the check worker (an env-server pool worker: verifiers'
    `serve_env` calls this first, as its `log_setup`), send the model traffic the respx mock
    answers in the worker (POST .../chat/completions and GET .../models on any host not on
    this machine: the agent's upstream, a judge's unresolvable endpoint) to the scripted
    model's loopback server `url`, for the life of the process. Anything else goes on as it
    would (the socket guard refuses other hosts there: `vfcheck._host.child_sockets`)."""
    if _FORWARDING:
        return
    target = httpx.URL(url)

    async def forward(request: httpx.Request) -> httpx.Response:
        headers = {k: v for k, v in request.headers.items() if k.lower() not in DROPPED_HEADERS}
        sent = httpx.Request(request.method, request.url.copy_with(
            scheme=target.scheme, host=target.host, port=target.port),
            headers=headers, content=await request.aread())
        async with httpx.AsyncClient(timeout=None) as client:
            answer = await client.send(sent)
        kept = {k: v for k, v in answer.headers.items() if k.lower() not in DROPPED_HEADERS
                and k.lower() != "content-encoding"}
        return httpx.Response(answer.status_code, headers=kept, content=answer.content)

    router = respx.MockRouter(assert_all_called=False, assert_all_mocked=False)
    router.route(ToThisMachine(True)).pass_through()
    router.route(method="POST", path__regex=r"/chat/completions/?$").mock(side_effect=forward)
    router.route(method="GET", path__regex=r"/models/?$").mock(side_effect=forward)
    router.route().pass_through()
    router.start()
    _FORWARDING.append(router)


class ToThisMachine(Pattern):
    """A respx pattern: the request's host is this machine (`vfcheck._shared.this_machine`, the
    definition the socket guard uses). No `key`: respx registers only keyed patterns."""

    def parse(self, request: httpx.Request) -> bool:
        return is_this_machine(request.url.host)


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
