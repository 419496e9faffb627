"""The socket guard in the processes env code runs in besides the check worker: the tool
servers verifiers starts for an env's toolsets, and whatever else it or env code starts
with Python.

A tool whose server asks a remote service works in the author's shell and fails offline;
with an `except` around the call it fails silently. The worker's own guard
(`vfcheck._host.offline_sockets`) cannot see it: a tool server is a process of its own.
verifiers' subprocess runtime starts each one with the worker's environment, so the worker
puts a startup hook on `PYTHONPATH` (`child_startup/sitecustomize.py`, the way coverage.py
measures subprocesses) and names a log file in `CHILD_LOG_VAR` (`guard_children`). Each
Python process started below then refuses connections to other hosts, as the worker does,
and appends one JSON line per refusal to that log (`guard_this_process`), which
`hygiene.network` reads back (`read_child_attempts`).

Not seen: a process started with `python -I` or `-E` (no `PYTHONPATH`), one that cannot
import vfcheck (a harness program's own uv environment), and programs that are not Python.
"""

from __future__ import annotations

import json
import os
import sys
import sysconfig
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

CHILD_LOG_VAR = "VFCHECK_CHILD_SOCKETS"
"""The log file of refused connections, for the processes started below the worker."""
STARTUP_DIR = Path(__file__).resolve().parent / "child_startup"
"""Holds the `sitecustomize` that installs the guard at a child's start."""


@dataclass(frozen=True)
class ChildAttempt:
    """One connection a process below the worker tried and was refused."""

    host: str
    port: int | None
    code: str
    """The env code on the stack (`add at my_env.py:41`), or why none is known."""
    process: str
    """What the process is: `the tool server python -m my_env`."""
    pid: int | None = None


def child_log_of(events: Path) -> Path:
    """The log of refused connections beside a worker's event log (restarts share it)."""
    return events.with_name(events.name + ".child-sockets.jsonl")


def guard_children(log: Path) -> None:
    """Make every Python process started from now on below this one refuse connections to
    other hosts, logging each to `log`."""
    log.parent.mkdir(parents=True, exist_ok=True)
    log.touch()
    os.environ.update(guarded_environ(os.environ, log))


def guarded_environ(environ: Mapping[str, str], log: Path) -> dict[str, str]:
    """`environ` as `guard_children(log)` leaves it (the warm interpreter starts with it
    before the guard is on, so that the processes it forks match those started cold)."""
    env = dict(environ)
    env[CHILD_LOG_VAR] = str(log)
    current = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(STARTUP_DIR) not in current:
        env["PYTHONPATH"] = os.pathsep.join([str(STARTUP_DIR), *current])
    return env


def read_child_attempts(log: Path) -> list[ChildAttempt]:
    """The refusals logged so far (a line cut short by a killed process is left out)."""
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        try:
            entry = json.loads(line)
            found.append(ChildAttempt(str(entry["host"]), entry.get("port"),
                                      str(entry["code"]), str(entry["process"]),
                                      entry.get("pid")))
        except (ValueError, KeyError, TypeError):
            continue
    return found


# -- in the child


def guard_this_process() -> None:
    """Refuse this process's connections to other hosts for its whole life, logging each
    to `CHILD_LOG_VAR`'s file (called by the startup hook)."""
    from vfcheck._host.offline_sockets import install, target_of

    log = os.environ.get(CHILD_LOG_VAR)
    if not log:
        return

    def record(host: str, port: int | None) -> str:
        entry = {"host": host, "port": port, "code": env_code(sys._getframe(2)),
                 "process": what_process(), "pid": os.getpid()}
        try:
            with open(log, "a", encoding="utf-8") as out:  # one short append: one line
                out.write(json.dumps(entry) + "\n")
        except OSError:
            pass  # the run is over and its folder gone: refusing is what matters
        return (f"vfcheck runs offline: {entry['process']} (pid {entry['pid']}) connected "
                f"to {target_of(host, port)} ({entry['code']}); vfcheck serves only the model "
                "and judge endpoints, and cannot serve a process of its own")

    install(record)


def what_process() -> str:
    """`the tool server python -m my_env`, or the command line of another process."""
    from vfcheck._host.processes import TOOL_SERVER_VARS

    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    command = (f"python -m {spec.name}" if spec is not None and spec.name
               else " ".join(["python", *sys.argv])[:120])
    kind = "the tool server" if TOOL_SERVER_VARS <= os.environ.keys() else "the process"
    return f"{kind} {command}"


def env_code(frame: FrameType | None) -> str:
    """The innermost frame of env code on the stack: code of the package run as `__main__`
    (a tool server runs the toolset's module), else code outside the standard library,
    the installed packages and vfcheck (an env of flat modules importing each other)."""
    frames = []
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    main = getattr(sys.modules.get("__main__"), "__spec__", None)
    package = main.name.split(".")[0] if main is not None and main.name else None
    shared = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    vfcheck_dir = str(Path(__file__).resolve().parents[1])

    def in_package(f: FrameType) -> bool:
        name = str(f.f_globals.get("__name__", ""))
        return not name.startswith("vfcheck") and (
            name == "__main__" or (package is not None and name.split(".")[0] == package))

    def outside_libraries(f: FrameType) -> bool:
        return not f.f_code.co_filename.startswith((*shared, vfcheck_dir, "<"))

    for belongs in (in_package, outside_libraries):
        if found := next((f for f in frames if belongs(f)), None):
            return f"{found.f_code.co_name} at {Path(found.f_code.co_filename).name}:" \
                   f"{found.f_lineno}"
    return "no env code on the stack"
