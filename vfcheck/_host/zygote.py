"""The zygote: a warm interpreter that forks the `python -m`/`-c` processes verifiers starts.

A tool server verifiers starts (`python -m <the toolset's module>`) spends seconds importing
verifiers before it serves one call. `python -m vfcheck._host.zygote FD` imports that
once (`PRELOAD`), then, for each request on the unix socket `FD` (a `WarmRequest` and the
child's stdin, stdout and stderr, passed with SCM_RIGHTS), forks the process asked for:

- twice, so that it is not the zygote's child: the middle process exits at once, and the
  child is adopted by the nearest child subreaper above, the process that asked (a check
  worker is one, `vfcheck._host.processes.become_subreaper`). That process can then
  wait for it, read its exit status and see it below itself, as with a cold start;
- in a session and process group of its own, with the stdio, working directory and
  environment asked for, `sys.path[0]` and `sys.argv` as a cold start sets them, and the
  module run as `__main__` by `runpy` (`-c`: the code compiled as `<string>`);
- exiting as an interpreter exits: `sys.exit`'s code, 1 after an uncaught exception's
  traceback, non-daemon threads joined and `atexit` run first; a signal kills it as it
  would kill a cold one (the zygote sets no handler of its own).

The zygote is single-threaded when it forks (it refuses to serve otherwise) and does
nothing else; its socket guard (`child_sockets`, installed by the startup hook as in any
child) is inherited by every fork. It dies with the process that started it.

A harness program (`python prog.py ...` in its own uv environment) gets a zygote of its own,
started by that interpreter for that script (`main(script)`, through `BOOT`): it imports what
the script imports (`vfcheck._host.script_imports`) instead of `PRELOAD`, and its children
run the script as `python prog.py` runs it.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import os
import signal
import socket
import sys
import threading
import time
import traceback
import types
from typing import NoReturn

from vfcheck._host.library_import import built_then_frozen
from vfcheck._host.script_imports import preload_script
from vfcheck._host.warm_plan import MAX_REQUEST, WarmRequest, exit_code

PRELOAD = (
    "verifiers", "verifiers.v1", "verifiers.v1.mcp.server", "verifiers.v1.mcp.toolset",
    "uvicorn", "mcp.server.mcpserver", "mcp.server.transport_security", "httpx",
    "urllib.request", "runpy",
    # what each tool server imported after the fork, once serving (verifiers 0.4.0): httpx's
    # transport (its first AsyncClient), anyio's asyncio backend, uvicorn's protocols
    "httpcore", "anyio._backends._asyncio", "uvicorn.lifespan.on",
    "uvicorn.protocols.http.auto", "uvicorn.protocols.http.h11_impl",
    "uvicorn.protocols.websockets.auto", "rich.logging",
)
"""What a tool server imports before it serves (`verifiers/v1/mcp/server.py`'s `_serve`),
and the probe verifiers runs next to it. Never env code: its import runs in each child."""
TITLE_ROOM = 4096
"""Bytes of padding on the zygote's command line, for its children's titles (`retitle`)."""
ADOPTED_WAIT = 5.0
"""Seconds a child waits for the middle process to exit (it exits at once) before running
anything: verifiers' tool server asks to die with its parent, which must be the adopter."""


def preload() -> list[str]:
    """Import `PRELOAD`; the names that failed (a verifiers without one of them)."""
    failed = []
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a child imports it itself, cold
            failed.append(name)
    return failed


def serve(sock: socket.socket) -> None:
    """Answer requests until the socket closes: `{"pid": N}` or `{"error": "..."}`."""
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(sock, MAX_REQUEST + 1024, 3)
        except OSError:
            return
        if not data:
            return
        try:
            if len(fds) != 3:
                raise ValueError(f"{len(fds)} file descriptors, not 3")
            pid = spawn(WarmRequest.decode(data), fds, sock)
            reply: dict[str, object] = {"pid": pid}
        except Exception as e:  # noqa: BLE001 - the asker starts this one cold
            reply = {"error": f"{type(e).__name__}: {e}"}
        finally:
            for fd in fds:
                os.close(fd)
        sock.send(json.dumps(reply).encode())


def spawn(request: WarmRequest, fds: list[int], sock: socket.socket) -> int:
    """Fork the child twice and return its pid, once the middle process is reaped (so the
    child has been adopted by then)."""
    read, write = os.pipe()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    middle = os.fork()
    if middle == 0:
        try:
            os.close(read)
            me = os.getpid()  # not the child's getppid(): once this exits, that is the adopter's
            child = os.fork()
            if child == 0:
                os.close(write)
                become(request, fds, sock, me)
            os.write(write, str(child).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as said:
        pid = said.read()
    os.waitpid(middle, 0)
    if not pid:
        raise OSError("the middle process did not fork")
    return int(pid)


def become(request: WarmRequest, fds: list[int], sock: socket.socket,
           middle: int) -> NoReturn:
    """In the forked child: turn into the process asked for and run it; never returns."""
    code = 1
    try:
        os.setsid()
        sock.detach()  # the zygote's socket: closed below, not by a later GC of this object
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        _close_above_stdio()
        deadline = time.monotonic() + ADOPTED_WAIT
        while os.getppid() == middle and time.monotonic() < deadline:
            time.sleep(0.001)
        os.chdir(request.cwd)
        os.environ.clear()
        os.environ.update(request.env)
        importlib.invalidate_caches()  # files written since the zygote started
        main = types.ModuleType("__main__")
        main.__dict__["__builtins__"] = sys.modules["builtins"]
        sys.modules["__main__"] = main
        sys.orig_argv = [sys.executable, *request.argv[1:]]
        retitle(sys.orig_argv)
    except BaseException:  # noqa: BLE001 - nothing of the request ran: say why, exit 1
        _report_and_exit(1)
    try:
        if request.kind == "module":
            if not sys.flags.safe_path:
                sys.path[0] = os.getcwd()
            sys.argv = ["-m", *request.args]
            run_module_as_main(request.target)
        elif request.kind == "script":
            run_script_as_main(request.target, request.args, main)
        else:
            if not sys.flags.safe_path:
                sys.path[0] = ""
            sys.argv = ["-c", *request.args]
            exec(compile(request.target, "<string>", "exec"), main.__dict__)
        code = 0
    except SystemExit as e:
        code, said = exit_code(e.code)
        if said is not None:
            with contextlib.suppress(Exception):
                print(said, file=sys.stderr)
    except KeyboardInterrupt:
        _finish()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)  # as CPython does after the traceback
    except BaseException:  # noqa: BLE001 - the interpreter's own handling: a traceback
        kind, error, tb = sys.exc_info()
        while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
            tb = tb.tb_next  # the zygote's own frames: a cold start has none
        with contextlib.suppress(Exception):
            sys.excepthook(kind, error.with_traceback(tb), tb)  # type: ignore[arg-type,union-attr]
        code = 1
    code = _finish(code)
    os._exit(code)


def retitle(argv: list[str]) -> None:
    """Show `argv` as this process's command line (`ps`, `/proc/PID/cmdline`, psutil), as
    `setproctitle` does on Linux: the zygote's own argument area (padded by `TITLE_ROOM`)
    is overwritten with one line that the kernel reads up to its NUL."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(Exception):
        import ctypes

        with open("/proc/self/stat", encoding="ascii", errors="replace") as f:
            stat = f.read()
        fields = stat[stat.rindex(")") + 2:].split()
        start, end = int(fields[45]), int(fields[46])  # proc(5): arg_start, arg_end
        room = end - start
        title = " ".join(argv).encode(errors="replace")[: room - 2]
        # the area's last byte not NUL: the kernel reads the title up to its first NUL
        ctypes.memmove(start, title + b"\0" * (room - len(title) - 1) + b" ", room)


def run_module_as_main(name: str) -> None:
    """What `python -m name` runs (`runpy`'s own entry for it where this Python has it)."""
    import runpy

    run = getattr(runpy, "_run_module_as_main", None)
    if run is not None:
        run(name, True)
    else:
        runpy.run_module(name, run_name="__main__", alter_sys=True)


def run_script_as_main(path: str, args: list[str], main: types.ModuleType) -> None:
    """What `python path *args` runs: `sys.path[0]` the script's folder (links resolved),
    `sys.argv` as given, `__file__` absolute, the file compiled under its own name."""
    import importlib.machinery

    full = os.path.abspath(path)
    if not sys.flags.safe_path:
        sys.path[0] = os.path.dirname(os.path.realpath(full))
    sys.argv = [path, *args]
    main.__dict__.update(__file__=full, __cached__=None,
                         __loader__=importlib.machinery.SourceFileLoader("__main__", full))
    with open(full, "rb") as f:
        source = f.read()
    exec(compile(source, full, "exec"), main.__dict__)


def _finish(code: int = 0) -> int:
    """Join the non-daemon threads, run `atexit` and flush stdio, as interpreter exit does.
    A `sys.exit` during them changes the code."""
    try:
        shutdown = getattr(threading, "_shutdown", None)
        if shutdown is not None:
            shutdown()
        atexit._run_exitfuncs()
    except SystemExit as e:
        code = exit_code(e.code)[0]
    except BaseException:  # noqa: BLE001
        pass
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    return code


def _report_and_exit(code: int) -> NoReturn:
    with contextlib.suppress(Exception):
        traceback.print_exc()
        sys.stderr.flush()
    os._exit(code)


def _close_above_stdio() -> None:
    """Close every descriptor but 0, 1 and 2, as `close_fds=True` does for a cold start."""
    for folder in ("/proc/self/fd", "/dev/fd"):
        try:
            fds = [int(name) for name in os.listdir(folder)]
        except (OSError, ValueError):
            continue
        for fd in fds:
            if fd > 2:
                with contextlib.suppress(OSError):
                    os.close(fd)
        return
    try:
        top = int(os.sysconf("SC_OPEN_MAX"))
    except (ValueError, OSError):
        top = 4096
    os.closerange(3, top)


def _die_with_parent() -> None:
    """Linux: end when the process that started the zygote ends (it also ends on EOF)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            import ctypes

            ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def main(script: str | None = None) -> None:
    """Serve on the socket `sys.argv[1]`: the tool servers' zygote, or `script`'s."""
    sock = socket.socket(fileno=int(sys.argv[1]))
    _die_with_parent()
    with built_then_frozen():  # ~1 s of CPU less; no child's collection copies their pages
        failed = preload() if script is None else preload_script(script)
    threads = threading.active_count()
    ready: dict[str, object] = {"ready": threads == 1, "failed": failed, "pid": os.getpid()}
    if threads != 1:
        ready["why"] = f"{threads} threads after the imports: forking is not safe"
    sock.send(json.dumps(ready).encode())
    if threads == 1:
        serve(sock)


if __name__ == "__main__":
    main()
