"""How a vfcheck process ends: its exit codes, and SIGTERM as an orderly interrupt.

Defined once for both front ends, `vfcheck run` and the check worker. SIGTERM (CI cancelling a
job) raises `Terminated`, a `KeyboardInterrupt`: it unwinds exactly as Ctrl-C does, so
`finally` blocks run, pytest ends its session as interrupted and reports get written; only
the exit code differs (143, not 130).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

EXIT_OK = 0
"""Nothing failed or errored."""
EXIT_FAILED = 1
"""A check failed or errored (`vfcheck run`: an env that does not load, an unfinished episode)."""
EXIT_USAGE = 2
"""A usage error, reported before any work starts (pytest's own code for it is 4)."""
EXIT_SIGINT = 130
EXIT_SIGTERM = 143


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the process is, as Ctrl-C's KeyboardInterrupt is."""


def raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated()


def interrupt_code(interrupt: BaseException) -> int:
    """130 for Ctrl-C, 143 for SIGTERM."""
    return EXIT_SIGTERM if isinstance(interrupt, Terminated) else EXIT_SIGINT


def signal_name(code: int | None) -> str | None:
    """`SIGTERM` for 143, `SIGINT` for 130 (what interrupted a run, as its reports say it)."""
    return {EXIT_SIGTERM: "SIGTERM", EXIT_SIGINT: "SIGINT"}.get(code) if code else None


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[bool]:
    """In the body SIGTERM raises `Terminated`; yields whether it does (signal handlers
    belong to the main thread: elsewhere nothing changes). The previous handler comes back."""
    if not _in_main_thread():
        yield False
        return
    previous = signal.signal(signal.SIGTERM, raise_terminated)
    try:
        yield True
    finally:
        signal.signal(signal.SIGTERM, previous)


def raise_interrupt(code: int) -> None:
    """Raise the interrupt a signal deferred by `deferred_interrupts` stands for."""
    raise Terminated() if code == EXIT_SIGTERM else KeyboardInterrupt()


@contextlib.contextmanager
def _noting_interrupts(raise_first: bool) -> Iterator[list[int]]:
    """SIGINT and SIGTERM are noted (their exit codes, in arrival order) for the body; the
    first one also interrupts when `raise_first`. Main thread only; handlers restored."""
    arrived: list[int] = []
    if not _in_main_thread():
        yield arrived
        return

    def on_signal(signum: int, frame: FrameType | None) -> None:
        arrived.append(EXIT_SIGTERM if signum == signal.SIGTERM else EXIT_SIGINT)
        if raise_first and len(arrived) == 1:
            raise_interrupt(arrived[0])

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield arrived
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def deferred_interrupts() -> contextlib.AbstractContextManager[list[int]]:
    """SIGINT and SIGTERM wait until the body is done: for writing what was found, which a
    second Ctrl-C must not cut short. Yields the exit codes of the signals that arrived
    meanwhile (the caller decides what they mean)."""
    return _noting_interrupts(raise_first=False)


def first_interrupt_wins() -> contextlib.AbstractContextManager[list[int]]:
    """In the body the first SIGINT or SIGTERM interrupts (KeyboardInterrupt, `Terminated`)
    and every later one is only noted: a second Ctrl-C, or CI's SIGTERM right after it, must
    not replace the interrupt being handled nor cut the unwinding short. Yields the exit
    codes of the signals in arrival order (the first is the run's)."""
    return _noting_interrupts(raise_first=True)


def ignore_interrupts() -> None:
    """SIGINT and SIGTERM do nothing from now on: for a process that is ending with the code
    of the interrupt it already handled (main thread only)."""
    if _in_main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)
