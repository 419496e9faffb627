"""A tool server that exits before it serves is seen when it exits, not 180 s later; one
that stays alive but idle without serving is seen after `SILENT_SECONDS`.

verifiers' subprocess runtime starts a toolset's server as `python -m <module>` with
`MCP_PORT_FILE` set, then polls that file once a second for 180 s
(`verifiers/v1/mcp/launch.py`, `_read_back_port`), whether the process still runs or not. A
module with no `__main__` that serves, or one that raises at start, exits at once, and the
episode waits out the runner's deadline. `watch` (called by `vfcheck._host.warm_starts` for
every tool-server start, warm or cold) waits for the port file or the exit; an exit first is
a `DeadToolServer`, handed to the callback the episode set (`watching`), which ends it. So
is a server still running after `SILENT_SECONDS` without its port that used no CPU and wrote
nothing to its log over the last `SILENT_SECONDS` (it serves over stdio, reads its stdin or
waits on something that will not come): a slow start, however slow the machine, is busy.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vfcheck._host import processes

PORT_FILE_VAR = "MCP_PORT_FILE"
"""Where verifiers' tool server writes its port (`verifiers/v1/mcp/launch.py`)."""
POLL = 0.05
"""Seconds between two looks at the port file and the process."""
TAIL_BYTES = 4000
SILENT_SECONDS = 15.0
"""How long a tool server may run idle (no CPU, no log output) without reporting its port
before it is named: a quarter of the runner's default deadline, ample for a process that is
waiting rather than working (on a machine busy with other work, a working process still gets
CPU within seconds)."""
IDLE_CPU = 0.05
"""CPU seconds over `SILENT_SECONDS` below which the server counts as idle (an interpreter
blocked in a read uses none; polling a socket uses a few milliseconds)."""


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
    silent_for: float | None = None
    """Set when the server still runs: the seconds it has run idle without its port
    (`exit_code` is then None)."""

    @property
    def server(self) -> str:
        """`the `calc` toolset's server `python -m vfc_x``."""
        named = f"the `{self.toolset}` toolset's server" if self.toolset else "the tool server"
        return f"{named} `python -m {self.module}`"

    def short(self) -> str:
        if self.silent_for is not None:
            return f"{self.server} ran {self.silent_for:.0f} s idle without serving"
        return f"{self.server} exited with code {self.exit_code} without serving"

    @property
    def last_line(self) -> str:
        lines = [line.strip() for line in self.log_tail.splitlines() if line.strip()]
        return lines[-1] if lines else ""

    def message(self) -> str:
        """`the tool server `python -m vfc_x` exited with code 0 before it reported its
        port, writing nothing (likely: ...)`."""
        said = (f"its last line: {self.last_line!r}" if self.last_line else "writing nothing")
        if self.silent_for is not None:
            return (f"{self.server} ran {self.silent_for:.0f} s without reporting its port, "
                    f"idle (no CPU, no output) all that time, {said}; likely cause: it serves "
                    "over another transport than the port verifiers reads (stdio), or waits "
                    "for input or a resource that will not come; verifiers would poll its port "
                    "file for 180 s")
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
    idle = _Idleness(getattr(proc, "pid", None), log)
    while proc.returncode is None:
        with contextlib.suppress(OSError):
            if port_file.read_text().strip().isdigit():
                return
        if idle.for_too_long():
            on_dead(DeadToolServer(module, None, _tail(log), toolset_of(log),
                                   silent_for=SILENT_SECONDS))
            return
        await asyncio.sleep(POLL)
    with contextlib.suppress(OSError):  # written just before it exited
        if port_file.read_text().strip().isdigit():
            return
    on_dead(DeadToolServer(module, proc.returncode, _tail(log), toolset_of(log)))


class _Idleness:
    """Whether a running server has used no CPU and written nothing for `SILENT_SECONDS`:
    its activity (CPU seconds of its process tree, its log's size) is read once a second and
    compared with the reading `SILENT_SECONDS` before."""

    def __init__(self, pid: int | None, log: Path | None) -> None:
        self.pid, self.log = pid, log
        self.readings: list[tuple[float, float, int]] = []
        """(monotonic time, CPU seconds, log bytes), oldest first, one a second."""

    def for_too_long(self) -> bool:
        if self.pid is None:  # not a process psutil can read: never called idle
            return False
        now = time.monotonic()
        if self.readings and now - self.readings[-1][0] < 1.0:
            return False
        cpu = processes.cpu_seconds(self.pid)
        if cpu is None:  # exited: the loop sees its return code next
            return False
        self.readings.append((now, cpu, _size(self.log)))
        while len(self.readings) > 1 and now - self.readings[1][0] >= SILENT_SECONDS:
            self.readings.pop(0)
        first_at, first_cpu, first_size = self.readings[0]
        return (now - first_at >= SILENT_SECONDS and cpu - first_cpu < IDLE_CPU
                and _size(self.log) == first_size)


def _size(log: Path | None) -> int:
    try:
        return -1 if log is None else log.stat().st_size
    except OSError:
        return -1


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
