"""One definition of this machine (`vfcheck._shared.this_machine`): the socket guard, the respx
mock and the API-key rule agree on it, so a request to a server of the env's own on
`0.0.0.0` or on the machine's name is neither refused by one nor let through by another."""

from __future__ import annotations

import asyncio
import socket

import httpx
import pytest
from aiohttp import web

from vfcheck._frontends.cassette import ApiKeyMissing, api_key_for
from vfcheck._host.offline_sockets import OfflineSockets, no_network
from vfcheck._model import ScriptedModel
from vfcheck._model.transports import ToThisMachine
from vfcheck._shared.this_machine import is_this_machine, own_hosts

OTHER_HOSTS = ["grader.example.org", "10.0.0.8", "169.254.169.254", "8.8.8.8",
               "2001:db8::1"]
HOSTS = [
    ("127.0.0.1", True), ("127.0.0.2", True), ("::1", True), ("localhost", True),
    ("LocalHost", True), ("api.localhost", True), ("0.0.0.0", True), ("::", True),
    (socket.gethostname(), True), ("[::1]", True),
    *[(host, False) for host in OTHER_HOSTS],
]


@pytest.fixture(autouse=True)
def other_hosts_are_not_ours() -> None:
    assert not own_hosts() & set(OTHER_HOSTS), "this machine has one of the sample addresses"


@pytest.mark.parametrize(("host", "here"), [*HOSTS, (None, True), ("", True),
                                            (b"127.0.0.2", True)])
def test_this_machine_is_its_loopback_its_wildcards_and_its_names(host: object,
                                                                    here: bool) -> None:
    assert is_this_machine(host) is here


def test_the_interfaces_addresses_are_this_machine() -> None:
    assert own_hosts(), "psutil lists no interface address"
    assert all(is_this_machine(host) for host in own_hosts())


@pytest.mark.parametrize(("host", "here"), HOSTS)
def test_the_mock_passes_through_exactly_the_hosts_the_socket_guard_lets_by(
        host: str, here: bool) -> None:
    netloc = f"[{host.strip('[]')}]" if ":" in host else host
    request = httpx.Request("GET", f"http://{netloc}:8080/x")
    assert bool(ToThisMachine(True).match(request)) is here


def test_a_server_of_the_env_on_the_wildcard_address_is_reached_under_the_mock() -> None:
    """httpx to `0.0.0.0:port` passes the mock and the socket guard alike."""

    async def grade(request: web.Request) -> web.Response:
        return web.json_response({"score": 1})

    async def main() -> tuple[int, str]:
        app = web.Application()
        app.router.add_get("/grade", grade)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        try:
            with ScriptedModel().mock(), no_network(OfflineSockets().record):
                async with httpx.AsyncClient() as client:
                    reply = await client.get(f"http://0.0.0.0:{port}/grade")
            return reply.status_code, reply.text
        finally:
            await runner.cleanup()

    status, text = asyncio.run(main())
    assert (status, text) == (200, '{"score": 1}')


def test_an_endpoint_on_this_machine_needs_no_api_key() -> None:
    assert api_key_for("VFC_KEY", f"http://{socket.gethostname()}:8000/v1", {}) is None
    assert api_key_for("VFC_KEY", "http://0.0.0.0:8000/v1", {}) is None
    with pytest.raises(ApiKeyMissing, match=r"\$VFC_KEY is not set"):
        api_key_for("VFC_KEY", "https://api.example.org/v1", {})
