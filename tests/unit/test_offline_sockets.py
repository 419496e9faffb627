"""The socket-level refusal: any lookup of, or connection to, another host is refused in
vfcheck's words and remembered with the code that asked; this machine stays reachable (the
mock, verifiers' interception server, tool servers and harness programs live there)."""

from __future__ import annotations

import errno
import socket
import threading
import urllib.error
import urllib.request

import pytest

from vfcheck._host.offline_sockets import NetworkBlocked, OfflineSockets, no_network
from vfcheck._model import EpisodeRef, TaskRef, episode_scope


def test_other_hosts_are_refused_and_remembered_and_loopback_still_connects() -> None:
    log = OfflineSockets()
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    accepted = threading.Thread(target=lambda: server.accept()[0].close(), daemon=True)
    accepted.start()
    ref = EpisodeRef(TaskRef(2, "k"), stage=lambda: "the scoring stage of an episode")
    with no_network(log.record), episode_scope(ref):
        with pytest.raises(urllib.error.URLError) as raised:  # what urllib makes of it
            urllib.request.urlopen("https://grader.example.org/v1/grade", timeout=5)
        with socket.socket() as raw, pytest.raises(ConnectionRefusedError):
            raw.connect(("93.184.216.34", 80))
        with pytest.raises(NetworkBlocked):
            socket.getaddrinfo(host="grader.example.org", port=80)  # keywords too
        assert socket.getaddrinfo(host="localhost", port=port)
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass  # the mock and verifiers' servers are on loopback
    accepted.join(5)
    server.close()
    assert isinstance(raised.value.reason, NetworkBlocked)
    assert str(raised.value.reason).startswith(
        f"[Errno {errno.ECONNREFUSED}] vfcheck runs offline: env code connected to "
        "grader.example.org:443 outside httpx (env code; the scoring stage of an episode)")
    assert [(a.host, a.port, a.task and a.task.index, a.stage) for a in log.taken()] == [
        ("grader.example.org", 443, 2, "the scoring stage of an episode"),
        ("93.184.216.34", 80, 2, "the scoring stage of an episode"),
        ("grader.example.org", 80, 2, "the scoring stage of an episode")]
    assert socket.getaddrinfo.__module__ == "socket"  # the patches are gone
