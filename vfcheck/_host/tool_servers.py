"""A tool server that exits before it serves is seen when it exits, not 180 s later.

verifiers' subprocess runtime starts a toolset's server as `python -m <module>` with
`MCP_PORT_FILE` set, then polls that file once a second for 180 s
(`verifiers/v1/mcp/launch.py`, `_read_back_port`), whether the process still runs or not. A
module with no `__main__` that serves, or one that raises at start, exits at once, and the
episode waits out the runner's deadline. `watch` (called by `vfcheck._host.warm_starts` for
every tool-server start, warm or cold) waits for the port file or the exit; an exit first is
a `DeadToolServer`, handed to the callback the episode set (`watching`), which ends it.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PORT_FILE_VAR = "MCP_PORT_FILE"
"""Where verifiers' tool server writes its port (`verifiers/v1/mcp/launch.py`)."""
POLL = 0.05
"""Seconds between two looks at the port file and the process."""
TAIL_BYTES = 4000


@dataclass(frozen=True)
class DeadToolServer:
    """A tool server that exited without writing its port."""

    module: str
    """What it ran: `python -m <module>` (the module defining the env's toolset)."""
    exit_code: int | None
    log_tail: str
    """The end of what it wrote (stdout and stderr share the log)."""
    toolset: str = ""
    """The toolset's server name, from its log's name (`vf_tool_<name>.log`)."""

    @property
    def server(self) -> str:
        """`the `calc` toolset's server `python -m vfc_x``."""
        named = f"the `{self.toolset}` toolset's server" if self.toolset else "the tool server"
        return f"{named} `python -m {self.module}`"

    def short(self) -> str:
        return f"{self.server} exited with code {self.exit_code} without serving"

    @property
    def last_line(self) -> str:
        lines = [line.strip() for line in self.log_tail.splitlines() if line.strip()]
        return lines[-1] if lines else ""

    def message(self) -> str:
        """`the tool server `python -m vfc_x` exited with code 0 before it reported its
        port, writing nothing (likely: ...)`."""
        said = (f"its last line: {self.last_line!r}" if self.last_line else "writing nothing")
        why = ("; likely cause: the module has no `if __name__ == \"__main__\":` that serves "
               "(`<YourToolset>.run()`)" if self.exit_code == 0 and not self.last_line else "")
        return (f"{self.server} exited with code "
                f"{self.exit_code} before it reported its port, {said}{why}; verifiers "
                "would poll its port file for 180 s")


ON_DEAD: contextvars.ContextVar[Callable[[DeadToolServer], None] | None] = \
    contextvars.ContextVar("vfcheck_on_dead_tool_server", default=None)
"""What the episode whose code starts a tool server here does when it dies unserved."""


@contextlib.contextmanager
def watching(on_dead: Callable[[DeadToolServer], None]) -> Iterator[None]:
    """Tool servers started from here (and from tasks created here) report to `on_dead`."""
    token = ON_DEAD.set(on_dead)
    try:
        yield
    finally:
        ON_DEAD.reset(token)


async def until_dead_server(episode: Awaitable[Any]) -> tuple[Any, DeadToolServer | None]:
    """`episode`'s result, or None and the tool server that exited unserved, once one did
    (`vfcheck._host.tool_servers`): the episode is cancelled then, as a deadline would."""
    dead: asyncio.Future[DeadToolServer] = asyncio.get_running_loop().create_future()

    def on_dead(server: DeadToolServer) -> None:
        if not dead.done():
            dead.set_result(server)

    with watching(on_dead):  # the episode's task copies this context
        job = asyncio.ensure_future(episode)
    try:
        await asyncio.wait({job, dead}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        job.cancel()
        raise
    if job.done():
        dead.cancel()
        return job.result(), None
    job.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await asyncio.wait_for(job, CANCEL_WAIT)
    return None, dead.result()


CANCEL_WAIT = 10.0
"""Seconds an episode cut short by a dead tool server gets to unwind (its runtime stops)."""


_WATCHES: set[asyncio.Future[None]] = set()


def watch(proc: Any, argv: list[Any], kwds: Mapping[str, Any]) -> None:
    """Watch `proc` if it is a tool server (its env names a port file) and an episode
    asked (`watching`)."""
    env = kwds.get("env") or {}
    on_dead = ON_DEAD.get()
    if on_dead is None or not isinstance(env, Mapping) or not env.get(PORT_FILE_VAR):
        return
    words = [os.fsdecode(a) for a in argv]
    module = words[words.index("-m") + 1] if "-m" in words[:-1] else " ".join(words)
    log = getattr(kwds.get("stdout"), "name", None)
    job = asyncio.ensure_future(_watch(proc, Path(env[PORT_FILE_VAR]), module,
                                       Path(log) if isinstance(log, str) else None, on_dead))
    _WATCHES.add(job)
    job.add_done_callback(_WATCHES.discard)


async def _watch(proc: Any, port_file: Path, module: str, log: Path | None,
                 on_dead: Callable[[DeadToolServer], None]) -> None:
    while proc.returncode is None:
        with contextlib.suppress(OSError):
            if port_file.read_text().strip().isdigit():
                return
        await asyncio.sleep(POLL)
    with contextlib.suppress(OSError):  # written just before it exited
        if port_file.read_text().strip().isdigit():
            return
    on_dead(DeadToolServer(module, proc.returncode, _tail(log), toolset_of(log)))


def toolset_of(log: Path | None) -> str:
    """`calc` from `vf_tool_calc.log`, the subprocess runtime's log of the `calc` server
    (`serve_in_runtime`); empty for another name."""
    name = "" if log is None else log.name
    if name.startswith("vf_tool_") and name.endswith(".log"):
        return name[len("vf_tool_"):-len(".log")]
    return ""


def _tail(log: Path | None) -> str:
    if log is None:
        return ""
    try:
        with log.open("rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - TAIL_BYTES))
            return f.read().decode(errors="replace")
    except OSError:
        return ""
