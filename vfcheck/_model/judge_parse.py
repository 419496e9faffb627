"""The parser of the `vf.Judge` whose call the scripted model is answering, found on the
call's own stack, so a pair of verdict replies is tried on it before it is sent.

A judge call reaches the in-process mock (respx's side effect) inside the judge's own
`Judge.complete` coroutine, which holds the judge (`self`) and the `parse` it will run on
the reply. Calling that very function on a candidate reply says whether the judge can read
it, with no guess about its format; a parser that raises on `yes` is then never fed `yes`.
verifiers is never imported here: `JudgeResponse` is taken from the module the running
judge came from. Over the loopback server (another task) no judge is found, and the
verdict is sent unchecked, as before.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from vfcheck._shared.paths import shown_path

__all__ = ["CallingJudge", "calling_judge", "note_unreadable", "scored_trace_id",
           "unreadable_judge"]

_MAX_DEPTH = 80
_JUDGE_MODULE = "verifiers.v1.judge"
_TRACE_MODULE = "verifiers.v1.trace"
_UNREADABLE: dict[int | None, str] = {}
"""Task index (None: a call of no known task) -> why its judge could not be answered in a
format it reads. One env per worker process, so this is the env's."""


def note_unreadable(task: int | None, why: str) -> None:
    """Record that a judge call of `task` was answered in no format its parser reads."""
    _UNREADABLE.setdefault(task, why)


def unreadable_judge(task: int | None) -> str | None:
    """Why the judge of `task` (None: of any task) could not be answered, or None."""
    if task is None:
        return next(iter(_UNREADABLE.values()), None)
    return _UNREADABLE.get(task, _UNREADABLE.get(None))


@dataclass(frozen=True)
class CallingJudge:
    """The judge making the call being answered: its class, prompt line, and parser."""

    name: str
    """`module.Class` of the judge, for messages."""
    where: str
    """The judge class's file:line, for messages (repo-relative where it can be)."""
    parse: Callable[[Any], Any] | None
    """The `parse` `Judge.complete` will run on the reply (None: it parses nothing)."""
    response_type: Any

    def reads(self, text: str) -> tuple[bool, Any]:
        """(True, parsed) if the judge's parser accepts `text`, else (False, the error)."""
        if self.parse is None:
            return True, text
        try:
            return True, self.parse(self.response_type(text=text))
        except Exception as error:  # noqa: BLE001 - the judge refusing is the answer
            return False, error

    def tells_apart(self, positive: str, negative: str) -> bool:
        """The parser accepts both replies and reads them as different verdicts."""
        ok_pos, pos = self.reads(positive)
        ok_neg, neg = self.reads(negative)
        if not (ok_pos and ok_neg):
            return False
        try:
            return bool(pos != neg)
        except Exception:  # noqa: BLE001 - a parsed type whose != raises: cannot tell
            return False


def calling_judge() -> CallingJudge | None:
    """The `vf.Judge` whose `complete` is on this stack, or None."""
    module = sys.modules.get(_JUDGE_MODULE)
    judge_type = getattr(module, "Judge", None)
    response_type = getattr(module, "JudgeResponse", None)
    if judge_type is None or response_type is None:
        return None
    frame: FrameType | None = sys._getframe(1)
    for _ in range(_MAX_DEPTH):
        if frame is None:
            return None
        if frame.f_code.co_name == "complete":
            judge = frame.f_locals.get("self")
            if isinstance(judge, judge_type):
                cls = type(judge)
                return CallingJudge(f"{cls.__module__}.{cls.__qualname__}", _where(cls),
                                    frame.f_locals.get("parse"), response_type)
        frame = frame.f_back
    return None


def scored_trace_id() -> str | None:
    """The id of the trace whose scoring makes the judge call on this stack: the `trace`
    `Judge.complete` records it on, else the nearest `trace` a caller (a `@vf.reward`,
    `Task.score`) holds. A judge call made where no `episode_scope` reaches (an env server's
    rollouts run in a context of their own) is tied to its episode by it."""
    module = sys.modules.get(_TRACE_MODULE)
    trace_type = getattr(module, "Trace", None)
    if trace_type is None:
        return None
    frame: FrameType | None = sys._getframe(1)
    for _ in range(_MAX_DEPTH):
        if frame is None:
            return None
        trace = frame.f_locals.get("trace")
        if isinstance(trace, trace_type):
            trace_id = getattr(trace, "id", None)
            return trace_id if isinstance(trace_id, str) else None
        frame = frame.f_back
    return None


def _where(cls: type) -> str:
    try:
        _, line = inspect.getsourcelines(cls)
        path = inspect.getsourcefile(cls) or "?"
    except (OSError, TypeError):
        return "?"
    return f"{shown_path(Path(path))}:{line}"
