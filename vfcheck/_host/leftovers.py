"""The processes left below a root (the check worker) once env code is done: what
`hygiene.processes` reports and the worker kills. A warm-started child is named by the
command line verifiers asked for, not the warm interpreter's (`vfcheck._host.warm_starts`)."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

from vfcheck._host.processes import (
    TOOL_SERVER_VARS,
    cmdline,
    descendants,
    environment_names,
    kill_pids,
)
from vfcheck._host.warm_starts import WARM

HELPERS = ("multiprocessing.resource_tracker", "multiprocessing.forkserver")
"""Python's own helper processes (started by libraries the env imports): they exit with
the worker, so they are not leaks."""


@dataclass(frozen=True)
class Leftover:
    pid: int
    cmdline: str
    tool_server: bool = False
    """A tool server verifiers started for one of the env's toolsets (`TOOL_SERVER_VARS`)."""


def leftovers(root: int) -> list[Leftover]:
    """Every live process below `root`, Python's own helpers left out."""
    found = []
    for pid in descendants(root):
        warm = WARM.described(pid)  # forked by the warm interpreter: /proc shows the zygote
        line = warm.cmdline if warm is not None else cmdline(pid)
        names = warm.env_names if warm is not None else environment_names(pid)
        if line is not None and not any(helper in line for helper in HELPERS):
            found.append(Leftover(pid, line, " -m " in line and TOOL_SERVER_VARS <= names))
    return found


def stop(found: list[Leftover]) -> None:
    """Kill the leftovers and reap those that are the worker's children."""
    kill_pids([p.pid for p in found])
    for p in found:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(p.pid, 0)
