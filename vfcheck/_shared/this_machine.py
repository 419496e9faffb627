"""What counts as this machine, for the three places that must agree on it: the socket guard
lets connections to it through (`vfcheck._host.offline_sockets`), the respx mock passes
httpx requests to it on to real servers (`vfcheck._model.transports`), and a recorded endpoint
on it needs no API key (`vfcheck._frontends.cassette`). Had they disagreed, an env's request to a
server of its own on `0.0.0.0` or on the machine's name would pass the socket guard and be
refused by the mock as network access.

This machine is: `localhost` and `*.localhost`, a loopback or unspecified address
(`127.0.0.0/8`, `::1`, `0.0.0.0`, `::`), the machine's name, and any address of its own
network interfaces (read from psutil, with no name lookup: a lookup could leave the machine).
"""

from __future__ import annotations

import functools
import ipaddress
import socket
from typing import Any

LOCAL_NAMES = frozenset({"localhost", "", "0.0.0.0", "::"})


def is_this_machine(host: object) -> bool:
    """Whether `host` (a name, an address, bytes, or None: a server's wildcard) is this
    machine."""
    if isinstance(host, bytes):
        host = host.decode(errors="replace")
    if not isinstance(host, str):
        return True
    name = host.split("%")[0].strip("[]").lower()
    if name in LOCAL_NAMES or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return name in own_hosts()
    return address.is_loopback or address.is_unspecified or address.compressed in own_hosts()


def url_is_this_machine(url: str) -> bool:
    """Whether `url`'s host is this machine (False for a URL httpx cannot read)."""
    import httpx

    try:
        return is_this_machine(httpx.URL(url).host)
    except httpx.InvalidURL:
        return False


@functools.cache
def own_hosts() -> frozenset[str]:
    """The machine's name and its interfaces' addresses (compressed, lower-cased), read
    once."""
    hosts = {socket.gethostname().lower()}
    try:
        import psutil

        interfaces: dict[str, list[Any]] = psutil.net_if_addrs()
    except (ImportError, OSError):  # no psutil, or no permission to list the interfaces
        interfaces = {}
    for addresses in interfaces.values():
        for entry in addresses:
            if entry.family not in (socket.AF_INET, socket.AF_INET6):
                continue
            try:
                hosts.add(ipaddress.ip_address(str(entry.address).split("%")[0]).compressed)
            except ValueError:
                continue
    return frozenset(hosts - {""})

