"""Warm starts: the `python -m`/`-c` processes verifiers starts, forked from a warm zygote.

verifiers' subprocess runtime starts each tool server (and the probe that waits for it) with
`asyncio.create_subprocess_exec([sys.executable, "-m", module], start_new_session=True,
...)`. `install()` puts `create_subprocess_exec` here in front of asyncio's: a start that
`vfcheck._host.warm_plan.plan` allows is forked by the zygote
(`vfcheck._host.zygote`), every other start goes on to asyncio unchanged. What verifiers
gets back is asyncio's own `Process`, over a `subprocess.Popen` whose one difference is how
the child came to be (`WarmPopen._execute_child`): the child is adopted by this process (a
child subreaper), so that `Process.wait`, the exit code, `os.killpg` on its group and
`hygiene.processes` behave as for a cold child.

A warm tool server has written its port file and accepts connections before the start
returns (`until_serving`): verifiers' own once-a-second polls of the port file and of the
URL then succeed at their first try. Where there is no `os.fork`, no child subreaper, or the
zygote died, starts are cold (`WarmStarts.why_cold`); `summary()` says how many went each way.
"""

from __future__ import annotations

import asyncio
import asyncio.subprocess
import contextlib
import contextvars
import dataclasses
import inspect
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vfcheck._host.port_files import PORT_FILES
from vfcheck._host.processes import is_subreaper, kill_with_descendants, start_time
from vfcheck._host.tool_servers import PORT_FILE_VAR, watch
from vfcheck._host.warm_plan import WarmRequest, plan, script_key
from vfcheck._host.zygote import TITLE_ROOM

READY_WAIT = 300.0
"""Seconds a start waits for the zygote's imports before it starts cold instead."""
REPLY_WAIT = 5.0
"""Seconds the zygote gets to fork one child (milliseconds normally). The asking process's
event loop waits meanwhile, so this stays well below what the watchdog calls a blocked
loop (`vfcheck._isolation.watchdog.MIN_STALL`); past it, the start is cold."""
NO_TOOL_SERVERS = "the env has no tool servers"
"""Why tool servers' starts are cold where the loaded env has none (its zygote stopped)."""
SCRIPT_ZYGOTES = 2
"""Zygotes a harness program gets at most (one per environment it was started with); a
program started with a new environment each time starts cold after these."""
SERVING_WAIT = 60.0
"""Seconds a warm tool server gets to write its port file and listen before the start returns
anyway (verifiers' own polling then goes on as for a cold one)."""


class ZygoteGone(OSError):
    """The zygote could not fork this child: it starts cold."""


BOOT = """\
import sys
try:
    import importlib.machinery, importlib.util
    spec = importlib.machinery.PathFinder.find_spec("vfcheck", [sys.argv[3]])
    package = importlib.util.module_from_spec(spec)
    sys.modules["vfcheck"] = package
    spec.loader.exec_module(package)
    from vfcheck._host.zygote import main
except BaseException as e:
    import json, socket
    why = {"why": f"vfcheck's zygote does not start here: {type(e).__name__}: {e}"}
    socket.socket(fileno=int(sys.argv[1])).send(json.dumps(why).encode())
    raise SystemExit(0)
main(sys.argv[4])
"""
"""`python -c BOOT FD TITLE_ROOM ROOT SCRIPT`: a harness program's zygote, in the harness's
own interpreter. vfcheck is loaded from ROOT (the folder that holds it) as one package, not
by putting ROOT on `sys.path`: the script's imports must come from its own environment."""


class Zygote:
    """One zygote process, started with `env`, and the socket to it: the tool servers'
    (this Python, `PRELOAD`), or with `python` and `script` a harness program's."""

    def __init__(self, env: Mapping[str, str], python: str | None = None,
                 script: str | None = None) -> None:
        self.env = dict(env)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock = ours
        self.lock = threading.Lock()
        self.ready = threading.Event()
        self.state: dict[str, Any] = {}
        fd, room = str(theirs.fileno()), " " * TITLE_ROOM
        if script is None:
            argv = [sys.executable, "-m", "vfcheck._host.zygote", fd, room]
        else:
            root = str(Path(__file__).resolve().parents[2])  # the folder holding vfcheck
            argv = [python or sys.executable, "-c", BOOT, fd, room, root, script]
        try:
            self.proc = subprocess.Popen(
                argv, pass_fds=(theirs.fileno(),), env=self.env, stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                # a harness program's imports may warn: nothing of the zygote's own is shown
                stderr=None if script is None else subprocess.DEVNULL,
                cwd=None if script is None else os.path.dirname(os.path.abspath(script)))
        finally:
            theirs.close()
        threading.Thread(target=self._await_ready, name="vfcheck-zygote", daemon=True).start()

    def _await_ready(self) -> None:
        try:
            self.state = json.loads(self.sock.recv(65536) or b"{}")
        except (OSError, ValueError) as e:
            self.state = {"why": f"{type(e).__name__}: {e}"}
        if not self.state.get("ready"):
            self.state.setdefault("why", f"exited with {self.proc.poll()}")
        self.ready.set()

    @property
    def usable(self) -> bool:
        return bool(self.state.get("ready")) and self.proc.poll() is None

    def spawn(self, request: WarmRequest, fds: list[int]) -> int:
        """The pid of the child forked for `request` with `fds` as its stdio."""
        with self.lock:
            try:
                self.sock.settimeout(REPLY_WAIT)
                socket.send_fds(self.sock, [request.encode()], fds)
                reply = json.loads(self.sock.recv(65536) or b"{}")
            except (OSError, ValueError) as e:
                self.state = {"why": f"its socket failed ({type(e).__name__}: {e})"}
                self.proc.kill()  # no late answer can be taken for the next start's
                raise ZygoteGone(self.state["why"]) from e
        if "pid" not in reply:
            raise ZygoteGone(str(reply.get("error") or "the zygote exited"))
        return int(reply["pid"])

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
            return
        self.proc.kill()
        self.proc.wait()


@dataclass
class WarmChild:
    """What a warm child was asked to be, for those who read it off `/proc` (`hygiene`)."""

    cmdline: str
    env_names: frozenset[str]
    started: str | None


@dataclass
class WarmStarts:
    """This process's warm starts: its zygote, and how each start went."""

    zygote: Zygote | None = None
    why_cold: str = "warm starts not set up in this process"
    counts: Counter[str] = field(default_factory=Counter)
    """`warm` and `cold` starts of processes through asyncio."""
    reasons: Counter[str] = field(default_factory=Counter)
    """Why the cold ones were cold."""
    seconds: dict[str, float] = field(default_factory=dict)
    """Seconds from asking for a tool server until it wrote its port, by `warm`/`cold`."""
    children: dict[int, WarmChild] = field(default_factory=dict)
    timings: set[asyncio.Future[None]] = field(default_factory=set)
    """The tasks measuring cold tool servers (`time_cold`)."""
    scripts_on: bool = False
    """Whether harness programs may start warm (`allow_scripts`)."""
    why_scripts_cold: str = "warm starts not set up in this process"
    scripts: dict[tuple[str, str, tuple[tuple[str, str], ...]], Zygote] = field(
        default_factory=dict)
    """The harness programs' zygotes, by `script_key`: each started at its script's first
    start, which waits for its imports (the start would have made them itself)."""

    @property
    def on(self) -> bool:
        """Whether starts may be warm here (a zygote started; it may still be importing)."""
        return self.zygote is not None

    def reset(self, why_cold: str = "") -> None:
        """Forget the counts of an earlier run in this process."""
        self.counts.clear()
        self.reasons.clear()
        self.seconds.clear()
        self.children.clear()
        if why_cold:
            self.why_cold = why_cold

    def off(self, why_cold: str) -> None:
        """Cold starts only, still counted (the `starts:` line says how many)."""
        self.reset(why_cold)
        self.scripts_on, self.why_scripts_cold = False, why_cold
        install()

    def start(self, env: Mapping[str, str] | None = None) -> None:
        """Start the tool servers' zygote with `env` (this process's environment when
        None), or say why starts stay cold. The counts so far stay (`reset` forgets them)."""
        install()  # cold starts are counted too
        if why := cannot_adopt():
            self.why_cold = why
        elif self.zygote is None:
            self.zygote = Zygote(os.environ if env is None else env)
            self.why_cold = ""

    def allow_scripts(self) -> None:
        """Let harness programs start warm from here on (a zygote per script, started at
        its first start), or say why they stay cold."""
        install()
        why = cannot_adopt()
        self.scripts_on, self.why_scripts_cold = not why, why

    def drop_zygote(self, why_cold: str) -> None:
        """Stop the tool servers' zygote only (the env turned out to have none)."""
        if self.zygote is not None:
            self.zygote.close()
            self.zygote = None
        self.why_cold = why_cold

    def close(self) -> None:
        """Stop the zygotes (their warm children live on, as this process's children)."""
        if self.zygote is not None:
            self.zygote.close()
            self.why_cold = "the warm interpreter was stopped"
            self.zygote = None
        for zygote in self.scripts.values():
            zygote.close()
        self.scripts.clear()
        if self.scripts_on:
            self.scripts_on, self.why_scripts_cold = False, "the warm interpreter was stopped"

    async def usable_zygote(self) -> Zygote | None:
        zygote = self.zygote
        if zygote is None:
            return None
        if not zygote.ready.is_set():
            await asyncio.to_thread(zygote.ready.wait, READY_WAIT)
        if not zygote.usable:
            self.why_cold = f"the warm interpreter is not usable: {zygote.state.get('why')}"
            return None
        return zygote

    async def script_zygote(self, request: WarmRequest) -> Zygote | str:
        """The zygote of `request`'s script (started by this first start), or why the
        start is cold (that zygote failed: its script's other starts are cold too)."""
        key = script_key(request)
        zygote = self.scripts.get(key)
        if zygote is None:
            same = [k for k in self.scripts if k[:2] == key[:2]]  # interpreter and script
            if len(same) >= SCRIPT_ZYGOTES:
                return (f"its environment differed in {len(same)} earlier starts: "
                        "a warm interpreter each would cost more than it saves")
            zygote = self.scripts[key] = Zygote(request.env, request.python, key[1])
        if not zygote.ready.is_set():
            await asyncio.to_thread(zygote.ready.wait, READY_WAIT)
        if not zygote.usable:
            why = zygote.state.get("why")
            return f"the harness program's warm interpreter is not usable: {why}"
        return zygote

    def summary(self) -> dict[str, Any]:
        """How this process's starts went (the report header's `starts:` line)."""
        return {"warm": self.counts["warm"], "cold": self.counts["cold"],
                "reasons": dict(self.reasons), "seconds": {k: round(v, 3) for k, v
                                                           in self.seconds.items()},
                "zygote": self.why_cold or "ready"}

    def described(self, pid: int) -> WarmChild | None:
        """The warm child `pid` if it still is that process."""
        child = self.children.get(pid)
        if child is not None and child.started is not None and start_time(pid) == child.started:
            return child
        return None

    async def exec(self, program: Any, args: tuple[Any, ...], kwds: dict[str, Any]) -> Any:
        """`asyncio.create_subprocess_exec(program, *args, **kwds)`, warm where it may be."""
        started = time.monotonic()
        given = kwds.get("env") or {}
        if isinstance(given, Mapping) and (noted := given.get(PORT_FILE_VAR)):
            PORT_FILES.note(Path(noted))  # verifiers never removes it
        decision = self.decide(program, args, kwds)
        if isinstance(decision, WarmRequest):
            found = await self.zygote_for(decision)
            if isinstance(found, str):
                decision = found
            else:
                decision, usable = found
                holder = _PENDING.set([(usable, decision)])
                try:
                    proc = await _ORIGINAL_EXEC(program, *args, **kwds)
                except ZygoteGone as e:
                    decision = f"the warm interpreter failed: {e}"
                    if usable is self.zygote:
                        self.why_cold = decision
                else:
                    asked = ([decision.python, decision.target, *decision.args]
                             if decision.kind == "script" else [program, *args])
                    self.adopted(proc.pid, asked, decision)
                    watch(proc, [program, *args], kwds)
                    if port_file := decision.env.get(PORT_FILE_VAR):
                        try:
                            await until_serving(proc, Path(port_file))
                        except BaseException:  # cancelled: verifiers never got `proc` to stop
                            kill_with_descendants(proc.pid)
                            raise
                        if proc.returncode is None:  # one that exited never listened
                            self.add_seconds("warm", started)
                    return proc
                finally:
                    _PENDING.reset(holder)
        self.counts["cold"] += 1
        self.reasons[str(decision)] += 1
        proc = await _ORIGINAL_EXEC(program, *args, **kwds)
        watch(proc, [program, *args], kwds)
        env = kwds.get("env") or {}
        if isinstance(env, Mapping) and (port_file := env.get(PORT_FILE_VAR)):
            timing = asyncio.ensure_future(self.time_cold(proc, Path(port_file), started))
            self.timings.add(timing)
            timing.add_done_callback(self.timings.discard)
        return proc

    async def zygote_for(self, request: WarmRequest) -> tuple[WarmRequest, Zygote] | str:
        """The request as the zygote gets it (an activated one with the environment its
        shell gives) and the zygote that forks it; or why the start is cold."""
        if request.activation:
            resolved = await activated(request)
            if isinstance(resolved, str):
                return resolved
            request = resolved
        if request.kind == "script":
            zygote = await self.script_zygote(request)
        else:
            zygote = await self.usable_zygote() or self.why_cold
        return zygote if isinstance(zygote, str) else (request, zygote)

    def decide(self, program: Any, args: tuple[Any, ...],
               kwds: dict[str, Any]) -> WarmRequest | str:
        """The warm request for this start, or why it is cold: a tool server's needs the
        tool servers' zygote, a harness program's needs `scripts_on`."""
        zygote = self.zygote
        if zygote is None and not self.scripts_on:
            return self.why_cold or "warm starts are off"
        decision = plan([program, *args], kwds, executable=sys.executable,
                        zygote_env=zygote.env if zygote is not None else {},
                        environ=os.environ, cwd=os.getcwd())
        if isinstance(decision, WarmRequest):
            if decision.kind == "script" and not self.scripts_on:
                return self.why_scripts_cold or "warm starts are off"
            if decision.kind != "script" and zygote is None:
                return self.why_cold or "warm starts are off"
        return decision

    def add_seconds(self, kind: str, started: float) -> None:
        self.seconds[kind] = self.seconds.get(kind, 0.0) + time.monotonic() - started

    def adopted(self, pid: int, argv: list[Any], request: WarmRequest) -> None:
        self.counts["warm"] += 1
        self.children[pid] = WarmChild(" ".join(os.fsdecode(a) for a in argv),
                                       frozenset(request.env), start_time(pid))

    async def time_cold(self, proc: Any, port_file: Path, started: float) -> None:
        """Add the seconds a cold tool server took to write its port (measured only)."""
        if await port_of(proc, port_file, poll=0.05) is not None:
            self.add_seconds("cold", started)


async def activated(request: WarmRequest) -> WarmRequest | str:
    """`request` with the environment verifiers' activating shell would give the interpreter,
    asked of that same shell (it runs `env -0` where it would exec the interpreter); or why
    it starts cold."""
    printer = shutil.which("env")
    if printer is None:
        return "no env program to ask the activating shell"
    proc = await _ORIGINAL_EXEC(*request.activation, printer, "-0", env=request.env,
                                cwd=request.cwd, stdin=asyncio.subprocess.DEVNULL,
                                stdout=asyncio.subprocess.PIPE,
                                stderr=asyncio.subprocess.DEVNULL)
    out, _ = await proc.communicate()
    if proc.returncode != 0:
        return f"the activating shell exited with {proc.returncode}"
    env = dict(item.split("=", 1) for item in out.decode(errors="surrogateescape").split("\0")
               if "=" in item)
    if "_" in env:  # a shell that sets `_` sets it to the program it execs
        env["_"] = request.python
    return dataclasses.replace(request, env=env, activation=[])


def cannot_adopt() -> str:
    """Why this process cannot fork children through a zygote ("" if it can)."""
    if not hasattr(os, "fork") or not hasattr(socket, "send_fds"):
        return "this platform has no fork or fd passing"
    if not is_subreaper():
        return "this process cannot adopt forked children (no child subreaper)"
    return ""


WARM = WarmStarts()
"""This process's warm starts."""
_PENDING: contextvars.ContextVar[list[tuple[Zygote, WarmRequest]] | None] = \
    contextvars.ContextVar("vfcheck_warm_pending", default=None)
"""The warm start the next `_start` of this task makes (taken by it)."""
_ORIGINAL_EXEC = asyncio.create_subprocess_exec


async def port_of(proc: Any, port_file: Path, *, poll: float = 0.01,
                  wait: float = SERVING_WAIT) -> int | None:
    """The port a tool server wrote to `port_file`; None if it exited or took too long."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and proc.returncode is None:
        with contextlib.suppress(OSError, ValueError):
            text = port_file.read_text().strip()
            if text.isdigit():
                return int(text)
        await asyncio.sleep(poll)
    return None


async def until_serving(proc: Any, port_file: Path, wait: float = SERVING_WAIT) -> None:
    """Return once the tool server wrote its port file and accepts connections on it (or it
    exited, or `wait` passed): verifiers reads the file and probes the URL next."""
    deadline = time.monotonic() + wait
    port = await port_of(proc, port_file, wait=wait)
    while port is not None and proc.returncode is None and time.monotonic() < deadline:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.01)
            continue
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        return


class WarmPopen(subprocess.Popen):  # type: ignore[type-arg]
    """A `Popen` whose child is forked by the zygote instead of exec'd. Everything else
    (the pipes, `wait`, `poll`, signals) is `Popen`'s own."""

    def __init__(self, zygote: Zygote, request: WarmRequest, *args: Any, **kwargs: Any) -> None:
        self._zygote = zygote
        self._request = request
        super().__init__(*args, **kwargs)

    def _execute_child(self, *args: Any) -> None:
        given = _EXECUTE_CHILD.bind(self, *args).arguments
        ends = [given["p2cread"], given["c2pwrite"], given["errwrite"]]
        fds = [fd if fd != -1 else std for fd, std in zip(ends, (0, 1, 2), strict=True)]
        self.pid = self._zygote.spawn(self._request, fds)
        self._child_created = True  # Popen's own flag: __del__ and wait() read it
        close = self._close_pipe_fds  # type: ignore[attr-defined]
        close(given["p2cread"], given["p2cwrite"], given["c2pread"], given["c2pwrite"],
              given["errread"], given["errwrite"])


_EXECUTE_CHILD = inspect.signature(subprocess.Popen._execute_child)  # type: ignore[attr-defined]


async def create_subprocess_exec(program: Any, *args: Any, **kwds: Any) -> Any:
    """asyncio's `create_subprocess_exec`, warm where `WARM` may start it so."""
    return await WARM.exec(program, args, kwds)


def _start(self: Any, args: Any, shell: Any, stdin: Any, stdout: Any, stderr: Any,
           bufsize: Any, **kwargs: Any) -> None:
    """`_UnixSubprocessTransport._start`: the warm start this task asked for, if any."""
    pending = _PENDING.get()
    if not pending:
        _ORIGINAL_START(self, args, shell, stdin, stdout, stderr, bufsize, **kwargs)
        return
    zygote, request = pending.pop()
    self._proc = WarmPopen(zygote, request, args, shell=shell, stdin=stdin, stdout=stdout,
                           stderr=stderr, universal_newlines=False, bufsize=bufsize, **kwargs)


_ORIGINAL_START: Any = None


def install() -> None:
    """Put `create_subprocess_exec` in front of asyncio's in this process (idempotent)."""
    global _ORIGINAL_START
    if sys.platform == "win32" or _ORIGINAL_START is not None:
        return
    from asyncio import unix_events

    transport: Any = unix_events._UnixSubprocessTransport  # type: ignore[attr-defined]
    _ORIGINAL_START = transport._start
    transport._start = _start
    for module in (asyncio, asyncio.subprocess):
        setattr(module, "create_subprocess_exec", create_subprocess_exec)  # noqa: B010
