"""Work dirs vfcheck owns, and the sweep of those a killed run left behind.

verifiers' subprocess runtime (0.4, `runtimes/subprocess.py`) makes each rollout's work dir
under `~/.cache/verifiers/runtimes/subprocess/<name>/` and copies the harness programs to
`~/.cache/verifiers/runtimes/scripts/`: paths fixed from `Path.home()` when verifiers is
imported (`utils/paths.py`); no config field or variable of its own moves them. Its cleanup
runs in `finally` blocks and an atexit hook, so a SIGKILLed process leaves its dirs behind,
and the harness programs and tool servers (sessions of their own, cwd in the work dir) keep
running.

So a process that plays episodes (the check worker, `vfcheck run`) enters `owned()` before
it imports verifiers: HOME becomes `<tempdir>/vfcheck-work/<pid>/`, marked with the pid and
its start time, while the XDG dirs, uv's cache and Pythons and the Python user base stay the
real home's (setdefault: the user's own settings win). uv keys a script's environment by the
script's path, so the per-pid program copies get environments of their own in uv's cache;
they go with the dir. The dir goes on normal exit and on SIGINT/SIGTERM. Every `owned()`,
and every front end at its end (the supervisor SIGKILLs workers), first sweeps dirs whose
owner is dead: processes still running from inside one (cwd, an argument, or
`VFCHECK_WORKDIR` under it) are killed, then the dir is removed.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import site
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from vfcheck._host.processes import kill_pids, running_inside, start_time
from vfcheck._shared.exits import EXIT_SIGTERM, Terminated, sigterm_interrupts

ROOT_NAME = "vfcheck-work"
OWNER_FILE = ".vfcheck-owner.json"
DIR_VAR = "VFCHECK_WORKDIR"
"""The owned dir, in the environment of the owner and everything it starts."""
REAL_HOME_VAR = "VFCHECK_REAL_HOME"
"""The real home, for env code that needs a file there."""
PROGRAMS = Path(".cache", "verifiers", "runtimes", "scripts")
"""Where verifiers copies the harness programs, under HOME."""
KILL_WAIT = 5.0


def root() -> Path:
    return Path(tempfile.gettempdir()) / ROOT_NAME


@dataclass(frozen=True)
class Owner:
    pid: int
    start: str | None
    """The pid's start time (`processes.start_time`): a reused pid is not the owner."""
    uv_cache_dir: str | None = None


def alive(owner: Owner) -> bool:
    now = start_time(owner.pid)
    return now is not None and (owner.start is None or now == owner.start)


def owner_of(folder: Path) -> Owner | None:
    """The owner of a dir under `root()`; None for a name that is not a pid (not ours)."""
    if not folder.name.isdigit():
        return None
    try:
        data = json.loads((folder / OWNER_FILE).read_text())
        return Owner(int(data["pid"]), data.get("start"), data.get("uv_cache_dir"))
    except (OSError, ValueError, KeyError, TypeError):
        return Owner(int(folder.name), None)  # still being made, or the marker is lost


def processes_inside(folder: Path) -> list[int]:
    """Processes running from inside `folder`: cwd under it, an argument naming a path under
    it, or `VFCHECK_WORKDIR` set to it. Never this process or its ancestors."""
    return running_inside(folder, DIR_VAR)


def kill_inside(folder: Path) -> list[int]:
    """SIGKILL every process running from inside `folder`; wait (bounded) until gone."""
    pids = processes_inside(folder)
    kill_pids(pids)
    deadline = time.monotonic() + KILL_WAIT
    while time.monotonic() < deadline and any(start_time(p) is not None for p in pids):
        time.sleep(0.05)
    return pids


def release(folder: Path, owner: Owner | None = None) -> None:
    """Kill what runs inside `folder`, drop uv's environments of its program copies, and
    remove it."""
    kill_inside(folder)
    _remove_program_environments(folder, owner)
    shutil.rmtree(folder, ignore_errors=True)


def _remove_program_environments(folder: Path, owner: Owner | None) -> None:
    programs = sorted((folder / PROGRAMS).glob("*.py"))
    if not programs:
        return
    from vfcheck._episodes.offline import uv_executable

    try:
        uv = uv_executable()
    except FileNotFoundError:
        return
    env = dict(os.environ)
    if owner is not None and owner.uv_cache_dir:
        env["UV_CACHE_DIR"] = owner.uv_cache_dir
    for program in programs:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            found = subprocess.run(
                [uv, "python", "find", "--script", str(program), "--no-config"],
                capture_output=True, text=True, env=env, timeout=30, stdin=subprocess.DEVNULL,
            ).stdout.strip().splitlines()
            venv = Path(found[-1]).parent.parent if found else None
            # uv answers with a plain interpreter when the script has no environment
            if venv is not None and venv.parent.name.startswith("environments"):
                shutil.rmtree(venv, ignore_errors=True)
                # and it locks that environment through `<tempdir>/uv-<its hash>.lock`
                lock = Path(tempfile.gettempdir()) / f"uv-{venv.name.rsplit('-', 1)[-1]}.lock"
                lock.unlink(missing_ok=True)


def sweep() -> list[Path]:
    """Release every dir under `root()` whose owner is dead; the dirs released."""
    try:
        folders = sorted(root().iterdir())
    except OSError:
        return []
    released = []
    for folder in folders:
        owner = owner_of(folder)
        if owner is None or owner.pid == os.getpid() or alive(owner):
            continue
        release(folder, owner)
        released.append(folder)
    return released


def _real_dirs(home: Path) -> dict[str, str]:
    """Where the real home keeps caches, config and tools, pinned for a redirected HOME."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(home / ".cache")
    data = os.environ.get("XDG_DATA_HOME") or str(home / ".local" / "share")
    dirs = {
        "XDG_CACHE_HOME": cache,
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": data,
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "UV_CACHE_DIR": str(Path(cache) / "uv"),
        "UV_PYTHON_INSTALL_DIR": str(Path(data) / "uv" / "python"),
        "UV_TOOL_DIR": str(Path(data) / "uv" / "tools"),
        "PYTHONUSERBASE": site.getuserbase(),
    }
    if (home / ".gitconfig").is_file():
        dirs["GIT_CONFIG_GLOBAL"] = str(home / ".gitconfig")
    return dirs


@contextlib.contextmanager
def owned() -> Iterator[Path]:
    """Run the body with HOME in a dir of this process's own (see the module doc): sweep
    dead owners' dirs, make ours, and release it on the way out (normal exit, SIGINT,
    SIGTERM). Inside a process whose (live) ancestor owns one already, reuse that."""
    inherited = os.environ.get(DIR_VAR)
    if inherited and (parent := owner_of(Path(inherited))) is not None and alive(parent):
        yield Path(inherited)
        return
    sweep()
    folder = root() / str(os.getpid())
    real_home = Path(os.environ.get(REAL_HOME_VAR) or Path.home())
    pins = {k: v for k, v in _real_dirs(real_home).items() if k not in os.environ}
    changes = {**pins, "HOME": str(folder), DIR_VAR: str(folder),
               REAL_HOME_VAR: str(real_home)}
    saved = {k: os.environ.get(k) for k in changes}
    folder.mkdir(parents=True, exist_ok=True)
    os.environ.update(changes)
    (folder / OWNER_FILE).write_text(json.dumps({
        "pid": os.getpid(), "start": start_time(os.getpid()),
        "uv_cache_dir": os.environ.get("UV_CACHE_DIR"),
    }))
    # SIGTERM's default ends the process without `finally`: make it unwind, with vfcheck's
    # one handler (a handler the caller installed, such as the front ends', is kept)
    catch = signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    try:
        with sigterm_interrupts() if catch else contextlib.nullcontext():
            yield folder
    except Terminated:
        if not catch:
            raise
        raise SystemExit(EXIT_SIGTERM) from None  # this process ends here, quietly: 143
    finally:
        release(folder)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
