"""The processes vfcheck starts, watches and kills, through psutil on every platform.

Env authors run vfcheck on macOS as well as Linux, so nothing here reads `/proc` itself:
psutil answers "what runs below this pid", "when did it start", "what is its command
line" and "what runs from inside this folder" on both. One thing stays Linux-only: a
child subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`), which keeps an orphan (`sh -c 'cmd &'`,
a double fork) below the process that asked instead of re-parenting it to init (or
launchd). Where the kernel offers none, `become_subreaper()` says False and such orphans
are out of sight; `vfcheck.checks.hygiene` reports that blind spot.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import psutil

GONE = (psutil.NoSuchProcess, psutil.AccessDenied)
"""What psutil raises for a process that exited meanwhile (`ZombieProcess` is a
`NoSuchProcess`) or that is not ours to inspect: either way, nothing to report on it."""
NOT_RUNNING = (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
TOOL_SERVER_VARS = frozenset({"VF_CONFIG", "VF_STATE_URL"})
"""What verifiers' subprocess runtime puts in the environment of a toolset's server, which
it starts as `<python> -m <the toolset's module>` (`verifiers/v1/mcp/launch.py`)."""
KILL_WAIT = 10.0
PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37
"""`<linux/prctl.h>`: Linux 3.4 and later."""


WORKER_HASH_SEED = 1
"""The check worker's own PYTHONHASHSEED, set by the supervisor that starts it: `determinism.load`
compares the worker's load with a fresh interpreter's under another seed."""

def _running(pid: int) -> psutil.Process | None:
    """The process `pid` if it exists and is not a zombie (exited, not yet reaped)."""
    try:
        proc = psutil.Process(pid)
        return None if proc.status() in NOT_RUNNING else proc
    except GONE:
        return None


def descendants(pid: int) -> list[int]:
    """Every process below `pid`, zombies included (nobody reaped them); [] if it is gone."""
    try:
        return [child.pid for child in psutil.Process(pid).children(recursive=True)]
    except GONE:
        return []


def ancestors(pid: int) -> list[int]:
    """The parent of `pid`, its parent, and so on up to init."""
    try:
        return [parent.pid for parent in psutil.Process(pid).parents()]
    except GONE:
        return []


def cpu_seconds(pid: int) -> float | None:
    """CPU time (user and system) used so far by `pid` and everything running below it;
    None if `pid` is gone. A child that exits meanwhile is left out of the sum."""
    proc = _running(pid)
    if proc is None:
        return None
    total = 0.0
    for each in (proc, *_children(proc)):
        with contextlib.suppress(*GONE):
            times = each.cpu_times()
            total += times.user + times.system
    return total


def _children(proc: psutil.Process) -> list[psutil.Process]:
    try:
        return list(proc.children(recursive=True))
    except GONE:
        return []


def start_time(pid: int) -> str | None:
    """When `pid` started, as a token no later process with the same pid shares; None if it
    is gone or a zombie.

    On Linux: clock ticks since boot (proc(5) `starttime`), the form vfcheck's work-dir
    markers have always held, so that runs of other vfcheck versions sharing the temp dir
    agree on who is alive, and unmoved by a clock step (psutil's create time is on the wall
    clock: ticks plus the boot time, which a step moves; read first, so both readings
    share it). Elsewhere: psutil's create time."""
    try:
        boot = psutil.boot_time()
        proc = _running(pid)
        if proc is None:
            return None
        if sys.platform == "linux":
            return str(round((proc.create_time() - boot) * os.sysconf("SC_CLK_TCK")))
        return repr(proc.create_time())
    except GONE:
        return None


def cmdline(pid: int) -> str | None:
    """The process's command line, or None if it is gone or a zombie (not running). A process
    with no arguments to show (in the middle of an exec, or a kernel thread) is named the way
    `ps` names it: `[name]`."""
    proc = _running(pid)
    if proc is None:
        return None
    try:
        words = proc.cmdline()
        return " ".join(words) if words else f"[{proc.name() or pid}]"
    except GONE:
        return None


def environment_names(pid: int) -> frozenset[str]:
    """The names of the process's environment variables; empty where they cannot be read
    (gone, another user's, a platform that hides them)."""
    proc = _running(pid)
    try:
        return frozenset(proc.environ()) if proc is not None else frozenset()
    except (*GONE, OSError):
        return frozenset()


def running_inside(folder: Path, env_var: str) -> list[int]:
    """Processes running from inside `folder`: cwd under it, an argument naming a path under
    it, or `env_var` set to it in their environment. Never this process or its ancestors."""
    spared = {os.getpid(), *ancestors(os.getpid())}
    needle = str(folder)

    def under(text: str) -> bool:
        return text == needle or f"{needle}/" in text or text.startswith(f"{needle} ")

    reads: list[Callable[[psutil.Process], bool]] = [
        lambda p: under(p.cwd() or ""),
        lambda p: any(under(arg) for arg in p.cmdline()),
        lambda p: p.environ().get(env_var) == needle,
    ]
    found = []
    for proc in psutil.process_iter():
        if proc.pid in spared:
            continue
        for inside in reads:  # cheapest first; one that cannot be read is no match
            with contextlib.suppress(*GONE, OSError):
                if inside(proc):
                    found.append(proc.pid)
                    break
    return found


def kill_pids(pids: Iterable[int]) -> None:
    """SIGKILL each of `pids` (one already gone, or not ours, is skipped)."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def kill_with_descendants(pid: int) -> None:
    """SIGKILL `pid` and everything below it. A process-group kill is not enough: verifiers
    starts harness programs and tool servers in sessions of their own."""
    kill_pids([*descendants(pid), pid])


def kill_tree(proc: subprocess.Popen[Any], wait: float = KILL_WAIT) -> None:
    """`kill_with_descendants` for `proc`, then reap it (bounded)."""
    kill_with_descendants(proc.pid)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=wait)


def _prctl() -> Any | None:
    if sys.platform != "linux":
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def become_subreaper() -> bool:
    """Adopt orphaned descendants (Linux); False where the kernel does not offer it."""
    prctl = _prctl()
    return prctl is not None and prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def is_subreaper() -> bool:
    """Whether this process adopts its orphaned descendants (asked of the kernel)."""
    prctl = _prctl()
    if prctl is None:
        return False
    flag = ctypes.c_int(0)
    return bool(prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) == 0 and flag.value)
