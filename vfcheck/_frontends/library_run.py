"""`pytest --vf-library`'s suite run: one `vfcheck library --json` process, started by the
process that owns the run, and its report read by every process that collects its items.

Without xdist the owner collects and knows its child's exit code. Under xdist the workers
collect, and the owner (the controller) never polls: a worker that waited for the report
only while the file was missing waited forever once the suite's process died without
writing it. So the owner leaves the process's pid and start time beside the report, and a
waiter gives up, saying why, as soon as that process is gone, or at the latest after
`LIBRARY_WAIT` seconds. The process's stderr goes to a log beside the report, whose last
line names the cause.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

LIBRARY_REPORT = "library.json"
LIBRARY_PROCESS = "library.pid"
LIBRARY_LOG = "library.log"
LIBRARY_WAIT = 900.0
"""Seconds a collector waits for the report while the suite's process still runs (the suite
takes about a minute of CPU; a loaded 2-core machine triples that)."""
POLL = 0.2


class LibraryRunError(Exception):
    """The suite's run ended, or stalled, without a report: the message says which."""


def start_library_run(run_dir: Path, *, no_baseline: bool) -> subprocess.Popen[bytes]:
    """Start the suite; it writes `run_dir/library.json`. verifiers is imported there, not
    here, and it runs while collection goes on."""
    import psutil

    log = (run_dir / LIBRARY_LOG).open("wb")
    with log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "vfcheck", "library", "--json", str(run_dir / LIBRARY_REPORT),
             *(["--no-baseline"] if no_baseline else [])],
            stdout=subprocess.DEVNULL, stderr=log, stdin=subprocess.DEVNULL)
    started = psutil.Process(proc.pid).create_time()
    (run_dir / LIBRARY_PROCESS).write_text(json.dumps({"pid": proc.pid, "started": started}))
    return proc


def library_report(run_dir: Path, proc: subprocess.Popen[bytes] | None = None, *,
                   wait: float = LIBRARY_WAIT) -> dict[str, Any]:
    """The suite's JSON report once it is written; LibraryRunError when its process ended
    without writing it (`proc`: the owner's own child) or `wait` seconds passed."""
    path = run_dir / LIBRARY_REPORT
    deadline = time.monotonic() + wait
    while not path.exists():
        ended = _ended(run_dir, proc)
        if ended is not None and not path.exists():
            raise LibraryRunError(f"vfcheck: the library suite ended without writing its "
                                  f"report ({ended}){_last_words(run_dir)}")
        if time.monotonic() > deadline:
            raise LibraryRunError(f"vfcheck: the library suite wrote no report within "
                                  f"{wait:g}s{_last_words(run_dir)}")
        time.sleep(POLL)
    report: dict[str, Any] = json.loads(path.read_text())
    return report


def _ended(run_dir: Path, proc: subprocess.Popen[bytes] | None) -> str | None:
    """How the suite's process ended, or None while it runs (or is not started yet)."""
    if proc is not None:
        return None if proc.poll() is None else f"exit {proc.returncode}"
    try:
        known = json.loads((run_dir / LIBRARY_PROCESS).read_text())
    except (OSError, ValueError):
        return None
    import psutil

    try:
        alive = psutil.Process(int(known["pid"]))
        if alive.create_time() == known["started"] and alive.status() != psutil.STATUS_ZOMBIE:
            return None
    except psutil.Error:
        pass
    return f"its process, pid {known['pid']}, is gone"


def _last_words(run_dir: Path) -> str:
    """`: <the last line it wrote to stderr>`, when it wrote one."""
    try:
        lines = (run_dir / LIBRARY_LOG).read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return f": {lines[-1].strip()}" if lines else ""
