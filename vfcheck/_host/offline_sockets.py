"""Connections to the outside, refused at the socket while vfcheck loads and checks an env.

vfcheck runs offline. An httpx request ends in the mock's router
(`vfcheck._model.offline_http`), but a reward that posts with `requests`, `urllib` or
`aiohttp`, or opens a socket, would get past it: on a machine with a network it would reach
the service, and an env that passes vfcheck in CI could still depend on that service. So
while a taskset loads (`load`) and while the checks run (the check worker), every name
lookup of a remote host and every connection to a non-local address is refused here with a
`NetworkBlocked` (a `ConnectionRefusedError`, what env code gets with no route). Each one is
remembered with what asked (`Attempt`), for `hygiene.network`.

This machine stays open (`vfcheck._shared.this_machine`: loopback, the unspecified addresses
servers bind, its name and its interfaces' addresses). The mock, verifiers' interception
server, tool servers and harness programs all live there. The patches are on the socket
module, never on verifiers.
"""

from __future__ import annotations

import contextlib
import errno
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vfcheck._shared.this_machine import is_this_machine

if TYPE_CHECKING:
    from vfcheck._model.types import TaskRef


class NetworkBlocked(ConnectionRefusedError):
    """Raised in place of a lookup of, or a connection to, a host outside this machine."""


Record = Callable[[str, int | None], str]
"""Called with each refused host and port; returns the error message env code gets."""


@contextlib.contextmanager
def no_network(record: Record) -> Iterator[None]:
    """Refuse name lookups of and connections to non-local hosts, telling `record`."""
    restore = install(record)
    try:
        yield
    finally:
        restore()


def install(record: Record) -> Callable[[], None]:
    """`no_network` until the returned function is called (for a whole process:
    `vfcheck._host.child_sockets`)."""
    real_getaddrinfo = socket.getaddrinfo
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def getaddrinfo(*args: Any, **kwargs: Any) -> Any:
        host = args[0] if args else kwargs.get("host")
        if not is_this_machine(host):
            port = args[1] if len(args) > 1 else kwargs.get("port")
            raise NetworkBlocked(errno.ECONNREFUSED, record(str(host), _port(port)))
        return real_getaddrinfo(*args, **kwargs)

    def outside(sock: socket.socket, address: Any) -> tuple[str, int | None] | None:
        if sock.family not in (socket.AF_INET, socket.AF_INET6) or not isinstance(
                address, tuple):
            return None
        return None if is_this_machine(address[0]) else (str(address[0]), _port(address[1]))

    def connect(self: socket.socket, address: Any) -> Any:
        if (where := outside(self, address)) is not None:
            raise NetworkBlocked(errno.ECONNREFUSED, record(*where))
        return real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> Any:
        if (where := outside(self, address)) is not None:
            record(*where)
            return errno.ECONNREFUSED
        return real_connect_ex(self, address)

    def restore() -> None:
        socket.getaddrinfo = real_getaddrinfo
        socket.socket.connect = real_connect  # type: ignore[method-assign]
        socket.socket.connect_ex = real_connect_ex  # type: ignore[method-assign]

    socket.getaddrinfo = getaddrinfo
    socket.socket.connect = connect  # type: ignore[method-assign,assignment]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign,assignment]
    return restore


def target_of(host: str, port: int | None) -> str:
    """`host:port`, or the host alone when the port is unknown."""
    return host if port is None else f"{host}:{port}"


def _port(port: Any) -> int | None:
    try:
        return int(port)
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True)
class Attempt:
    """One refused lookup or connection, and what made it."""

    host: str
    port: int | None
    code: str
    """The env code on the stack (`reward 'grade' at my_env.py:41`), or why none is known."""
    task: TaskRef | None
    stage: str


class OfflineSockets:
    """The check worker's log of refused connections, with the code that asked: env code on
    the calling thread's stack (`vfcheck._host.env_code.EnvCode`), and the episode or
    check it ran in (`vfcheck._model.scope`)."""

    def __init__(self, env_code: Any = None, kinds: Any = None) -> None:
        self.env_code = env_code
        self.kinds = kinds
        self.attempts: list[Attempt] = []
        self._lock = threading.Lock()

    def record(self, host: str, port: int | None) -> str:
        from vfcheck._model.scope import current_place

        task, stage = current_place()
        attempt = Attempt(host, port, self._code(), task, stage)
        with self._lock:
            self.attempts.append(attempt)
        return (f"vfcheck runs offline: env code connected to {target_of(host, port)} "
                f"outside httpx ({attempt.code}; {stage}); only httpx requests can be served "
                "offline, from a --script file's [[http]] entries")

    def _code(self) -> str:
        """The innermost env-code frame of this thread, as a hook when it is one."""
        from vfcheck._host.env_code import display_path, frames_of, hook_of

        if self.env_code is None:
            return "env code"
        frames = [f for f in frames_of(sys._getframe(2)) if f.f_code.co_filename
                  in self.env_code]
        if not frames:
            return "no env code on the stack: an asyncio client resolves names in a thread"
        innermost = frames[-1]
        hook = next((found[0] for f in reversed(frames)
                     if self.kinds is not None and (found := hook_of(f, self.kinds))), None)
        at = f"{display_path(innermost.f_code.co_filename)}:{innermost.f_lineno}"
        return f"{hook or innermost.f_code.co_name} at {at}"

    def taken(self) -> list[Attempt]:
        with self._lock:
            return list(self.attempts)


OFFLINE_SOCKETS = OfflineSockets()
"""The check worker's log (the worker tells it the env's code once the env has loaded)."""
