"""Where env code raised: the hook, file:line and the line of code, for a crash's message.

verifiers records an error escaping a hook in its boundary's words (`TaskError: task T
scoring: KeyError: 'ping'`), which name neither the hook nor the line; a stall names both
(`vfcheck._isolation.watchdog`), and so must a crash: `... (in reward 'echoed' at
my_env.py:29: `credit = CREDIT[self.data.answer]`)`.

- An error recorded on a trace keeps its traceback text (`Trace.record_error`): its root
  cause's innermost env-code frame is read from it (`site_in_traceback`), and the hook from
  the env's own classes (`method_hook`).
- vf-validate's rows keep only `str(error)`, so a validate check that raised is played once
  more, only then, under a tracer on this thread that notes where env code raised in that
  play's context alone (`raise_site`); the healthy path pays nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import linecache
import os
import re
import sys
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from types import FrameType, ModuleType
from typing import Any

from vfcheck._host.env_code import (
    EnvCode,
    HookKinds,
    display_path,
    frames_of,
    hook_of,
    method_hook,
)
from vfcheck._shared.error_text import Leaf, condense, group_leaves

FRAME = re.compile(r'^  File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>[^\n]+)$', re.M)
CHAINED = re.compile(r"^(?:The above exception was the direct cause of the following exception:"
                     r"|During handling of the above exception, another exception occurred:)$",
                     re.M)
"""The lines `traceback.format_exception` puts between a chain's exceptions (causes first)."""


@dataclass(frozen=True)
class CrashSite:
    hook: str | None
    """`reward 'echoed'`, `VfcTask.setup`, `tool 'add'`; None: no hook frame found."""
    function: str
    at: str
    """`file:line` of the innermost env-code frame."""
    code: str
    """That line of code, stripped."""

    def describe(self, where: str = "in") -> str:
        """`in reward 'echoed' at my_env.py:29: `credit = CREDIT[...]``."""
        who = self.hook or f"env code ({self.function})"
        return f"{where} {who} at {self.at}" + (f": `{self.code}`" if self.code else "")


class EnvKnowledge:
    """What the check worker knows of the env once it has loaded (its code, verifiers' hook
    classes); before that, or in another process, anything outside vfcheck, verifiers, the
    standard library and site-packages is env code."""

    def __init__(self) -> None:
        self.env_code: EnvCode | None = None
        self.kinds: HookKinds | None = None
        self._files: dict[str, bool] = {}

    def know(self, env_code: EnvCode, kinds: HookKinds) -> None:
        self.env_code, self.kinds, self._files = env_code, kinds, {}

    def is_env(self, filename: str) -> bool:
        """`filename in code()`, remembered (the tracer asks it on every call)."""
        known = self._files.get(filename)
        if known is None:
            known = self._files[filename] = filename in self.code()
        return known

    def code(self) -> EnvCode:
        if self.env_code is None:
            self.env_code = EnvCode()
        return self.env_code

    def hook_kinds(self) -> HookKinds:
        if (self.kinds is None or self.kinds.task is None) and "verifiers.v1" in sys.modules:
            self.kinds = HookKinds.of_verifiers()
        return self.kinds or HookKinds()


CRASH_SITES = EnvKnowledge()
"""The worker tells it the env's code once the env has loaded."""


def located(error_type: str, message: str, traceback_text: str | None) -> str:
    """`Type: message`, followed by where env code raised when its traceback shows it. A
    traceback in the message (a harness program's stderr) is condensed to its exception
    line; an exception group, in the message or the traceback, to its leaf exceptions, each
    with where env code raised it (`vfcheck._shared.error_text`)."""
    line = f"{error_type}: {condense(message, leaf_site)}"
    leaves = group_leaves(traceback_text) if traceback_text else []
    if leaves := [leaf for leaf in leaves if leaf.exception not in line]:
        return f"{line}: " + "; ".join(
            leaf.exception + (f" ({where})" if (where := leaf_site(leaf)) else "")
            for leaf in leaves)
    site = site_in_traceback(traceback_text) if traceback_text else None
    return f"{line} ({site.describe()})" if site is not None else line


def leaf_site(leaf: Leaf) -> str | None:
    """Where env code raised an exception group's leaf, from its own traceback."""
    site = site_in_traceback(leaf.traceback)
    return site.describe() if site is not None else None


def located_error(error: Any) -> str:
    """A recorded error (verifiers' `trace.Error`) as `located` writes it."""
    return located(error.type, error.message, getattr(error, "traceback", None))


def site_in_traceback(text: str) -> CrashSite | None:
    """The innermost env-code frame of the first exception of the chain with one (the root
    cause comes first), and the hook it runs in."""
    env_code = CRASH_SITES.code()
    for section in CHAINED.split(text):
        frames = [(m["file"], int(m["line"]), m["func"]) for m in FRAME.finditer(section)]
        env = [f for f in frames if f[0] in env_code]
        if not env:
            continue
        file, line, function = env[-1]
        hook = next((found for f in reversed(env) if (found := hook_in_source(*f))), None)
        return CrashSite(hook, function, f"{display_path(file)}:{line}",
                         linecache.getline(file, line).strip())
    return None


def hook_in_source(file: str, line: int, function: str) -> str | None:
    """The hook `function` (at `file:line`) is, found among the classes of its loaded module."""
    path = os.path.realpath(file)
    kinds = CRASH_SITES.hook_kinds()
    for module in list(sys.modules.values()):
        if not _is_file_of(module, path):
            continue
        for owner in list(vars(module).values()):
            if not isinstance(owner, type) or owner.__module__ != module.__name__:
                continue
            for name, attr in list(vars(owner).items()):
                code = getattr(inspect.unwrap(getattr(attr, "__func__", attr)), "__code__", None)
                if (code is not None and code.co_name == function
                        and code.co_firstlineno <= line
                        and os.path.realpath(code.co_filename) == path
                        and (found := method_hook(owner, name, kinds)) is not None):
                    return found[0]
    return None


def _is_file_of(module: ModuleType | None, path: str) -> bool:
    file = getattr(module, "__file__", None)
    return bool(file) and os.path.realpath(str(file)) == path


# -- a play again, under a tracer: where env code raised

_WATCHING: contextvars.ContextVar[list[tuple[BaseException, CrashSite]] | None] = (
    contextvars.ContextVar("vfcheck_crash_watch", default=None))
_tracing = 0
_previous: Any = None


Raised = list[tuple[BaseException, CrashSite]]
"""What env code raised under `watching()`, first raised first, each where it first did."""


@contextlib.contextmanager
def watching() -> Iterator[Raised]:
    """Note where env code raises in this context (and the tasks it starts), by a tracer on
    this thread: every call there pays for it, so only for a play that failed, or one that
    runs alone (`vfcheck._host.attempts.Attempt.alone`)."""
    global _tracing, _previous
    seen: Raised = []
    token = _WATCHING.set(seen)
    if _tracing == 0:
        _previous = sys.gettrace()
        sys.settrace(_on_call)
    _tracing += 1
    try:
        yield seen
    finally:
        _tracing -= 1
        if _tracing == 0:
            sys.settrace(_previous)
        _WATCHING.reset(token)


def site_of_error(seen: Raised, error: str) -> CrashSite | None:
    """The site of the first exception whose `Type: message` is in `error` (what escaped:
    a boundary's wrapper holds its cause's words)."""
    return next((site for exc, site in seen if f"{type(exc).__name__}: {exc}" in error), None)


def site_of_timeout(seen: Raised) -> CrashSite | None:
    """Where env code was waiting when a deadline cancelled it: the first `CancelledError`
    (or `TimeoutError`) that went through env code."""
    return next((site for exc, site in seen
                 if isinstance(exc, asyncio.CancelledError | TimeoutError)), None)


async def raise_site(play: Callable[[], Awaitable[Any]], error: str,
                     timeout: float) -> CrashSite | None:
    """Play `play()` again (bounded by `timeout`) under `watching()`: where env code raised
    `error` (`site_of_error`), or None."""
    with watching() as seen:
        try:
            await asyncio.wait_for(play(), timeout)
        except Exception:  # noqa: BLE001 - the play fails again: that is what it is here for
            pass
    return site_of_error(seen, error)


def _on_call(frame: FrameType, event: str, arg: Any) -> Any:
    if _WATCHING.get() is None or not CRASH_SITES.is_env(frame.f_code.co_filename):
        return None
    return _on_line


def _on_line(frame: FrameType, event: str, arg: Any) -> Any:
    if event == "exception" and (seen := _WATCHING.get()) is not None:
        error = arg[1]
        if not any(error is known for known, _ in seen):
            seen.append((error, _site_of(frame)))
    return _on_line


def _site_of(frame: FrameType) -> CrashSite:
    kinds = CRASH_SITES.hook_kinds()
    env = [f for f in frames_of(frame) if CRASH_SITES.is_env(f.f_code.co_filename)]
    hook = next((found[0] for f in reversed(env) if (found := hook_of(f, kinds))), None)
    file = frame.f_code.co_filename
    return CrashSite(hook, frame.f_code.co_name, f"{display_path(file)}:{frame.f_lineno}",
                     linecache.getline(file, frame.f_lineno).strip())
