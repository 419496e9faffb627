"""Which frames on a stack are env code, and which verifiers hook they run: what the
watchdog names a stall by, the socket guard names a refused connection by, and a crash
report names its line by. Nothing here imports verifiers until `HookKinds.of_verifiers`."""

from __future__ import annotations

import ast
import asyncio
import linecache
import os
import sys
import sysconfig
from collections.abc import Iterable
from types import FrameType
from typing import Any

TASK_HOOKS = {"setup": "setup", "finalize": "finalize", "validate": "validate",
              "score": "scoring", "stage_verifier": "finalize"}
"""`Task` lifecycle methods and the stage each is (`vfcheck.checks._registry.Stage`)."""
MARKED_HOOKS = {"reward": "scoring", "metric": "scoring", "stop": "episode",
                "intercept": "episode", "tool": "episode"}
"""verifiers' hook decorators (the attribute `verifiers.v1.utils.decorators.mark` sets)."""


class HookKinds:
    """verifiers' classes whose methods are hooks, resolved once in the loop's thread (the
    watchdog thread must not import while the loop thread may hold the import lock)."""

    def __init__(self) -> None:
        self.task: type | None = None
        self.toolset: type = type(None)
        self.judge: type = type(None)
        self.harness: type = type(None)

    @classmethod
    def of_verifiers(cls) -> HookKinds:
        import verifiers.v1 as vf

        kinds = cls()
        kinds.task, kinds.toolset, kinds.judge, kinds.harness = (
            vf.Task, vf.Toolset, vf.Judge, vf.Harness)
        return kinds


class EnvCode:
    """Which source files are env code: the env's own package (wherever it is installed),
    and anything outside vfcheck, verifiers, the standard library and site-packages."""

    def __init__(self, modules: Iterable[str] = ()) -> None:
        paths = sysconfig.get_paths()
        outside = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
        for package in ("vfcheck", "vfcheck_chat", "verifiers"):
            module = sys.modules.get(package)
            if module is not None and module.__file__:
                outside.add(os.path.dirname(module.__file__))
        self.outside = tuple(os.path.join(os.path.realpath(p), "") for p in outside)
        self.own = tuple(root for m in modules if (root := self._root(m)) is not None)
        """The env's own files, env code even under site-packages (an installed env)."""

    @staticmethod
    def _root(module_name: str) -> str | None:
        """The env's top package folder; for a taskset shipped with verifiers
        (`verifiers.v1.tasksets.<name>`) its own module file; None for the rest of
        verifiers and vfcheck (the env's class may be verifiers' own `SingleAgentEnv`)."""
        top_name = module_name.split(".")[0]
        if top_name in ("verifiers", "vfcheck", "vfcheck_chat"):
            if not module_name.startswith("verifiers.v1.tasksets."):
                return None
            chosen = sys.modules.get(module_name)
        else:
            chosen = sys.modules.get(top_name) or sys.modules.get(module_name)
        if chosen is None or not getattr(chosen, "__file__", None):
            return None
        file = os.path.realpath(chosen.__file__ or "")
        return os.path.join(os.path.dirname(file), "") if file.endswith("__init__.py") else file

    def __contains__(self, filename: str) -> bool:
        if filename.startswith("<"):
            return False
        path = os.path.realpath(filename)
        if any(path == own or path.startswith(own) for own in self.own):
            return True
        return not path.startswith(self.outside)


def display_path(filename: str) -> str:
    """`filename` relative to the `sys.path` entry it is imported from (`my_env/rewards.py`)."""
    path = os.path.realpath(filename)
    roots = [os.path.join(os.path.realpath(p), "") for p in sys.path if p]
    best = max((r for r in roots if path.startswith(r)), key=len, default=None)
    return path[len(best):] if best else os.path.basename(path)


def called_at(frame: FrameType) -> str | None:
    """The callee of the call or await `frame` is stopped at (`time.sleep`,
    `asyncio.sleep`), read from the instruction's source span (`co_positions`)."""
    try:
        start, end, col, end_col = list(frame.f_code.co_positions())[frame.f_lasti // 2]
        if start is None or end is None or col is None or end_col is None:
            return None
        lines = linecache.getlines(frame.f_code.co_filename)[start - 1:end]
        text = (lines[0][col:end_col] if start == end
                else lines[0][col:] + "".join(lines[1:-1]) + lines[-1][:end_col])
        node = ast.parse(text.strip(), mode="eval").body
    except (IndexError, SyntaxError, ValueError):
        return None
    if isinstance(node, ast.Await):
        node = node.value
    return ast.unparse(node.func) if isinstance(node, ast.Call) else None


def hook_of(frame: FrameType, kinds: HookKinds) -> tuple[str, str, int | None] | None:
    """`(hook, stage, task index)` if `frame` runs a hook verifiers calls: a Task's
    lifecycle method or decorated hook, a Toolset's tool, a Judge, a Harness."""
    code = frame.f_code
    if kinds.task is None or not code.co_varnames or code.co_varnames[0] != "self":
        return None
    owner = frame.f_locals.get("self")
    found = method_hook(type(owner), code.co_name, kinds)
    if found is None:
        return None
    index = (getattr(getattr(owner, "data", None), "idx", None)
             if isinstance(owner, kinds.task) else None)
    return found[0], found[1], index


def method_hook(owner: type, name: str, kinds: HookKinds) -> tuple[str, str] | None:
    """`(hook, stage)` if method `name` of class `owner` is a hook verifiers calls."""
    if kinds.task is None:
        return None
    method = getattr(owner, name, None)
    marks = [m for m in MARKED_HOOKS if getattr(method, m, False)]
    if issubclass(owner, kinds.task):
        if marks:
            return f"{marks[0]} {name!r}", MARKED_HOOKS[marks[0]]
        if name in TASK_HOOKS:
            return f"{owner.__name__}.{name}", TASK_HOOKS[name]
        return None
    if issubclass(owner, kinds.toolset) and "tool" in marks:
        return f"tool {getattr(method, 'tool_name', None) or name!r}", "episode"
    if issubclass(owner, kinds.judge):
        return f"judge {owner.__name__}.{name}", "scoring"
    if issubclass(owner, kinds.harness):
        return f"harness {owner.__name__}.{name}", "episode"
    return None


def hook_rank(hook: str | None) -> int:
    """How specific a hook `hook_of` named is: a decorated hook (a reward, a tool) 0, a judge
    or a harness 1, a Task's own lifecycle method 2, no hook 4."""
    if hook is None:
        return 4
    kind = hook.split(" ", 1)[0]
    return 0 if kind in MARKED_HOOKS else 1 if kind in ("judge", "harness") else 2


def frames_of(frame: FrameType | None) -> list[FrameType]:
    """A thread's live frames, outermost first."""
    frames = []
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    return frames[::-1]


def awaited_frames(task: asyncio.Task[Any]) -> list[FrameType]:
    """A suspended task's coroutine chain (`cr_await`), outermost first:
    `Task.get_stack()` gives only its outermost coroutine's frame."""
    frames: list[FrameType] = []
    awaitable: Any = task.get_coro()
    while awaitable is not None:
        frame = getattr(awaitable, "cr_frame", None) or getattr(awaitable, "gi_frame", None)
        if frame is None:
            break
        frames.append(frame)
        awaitable = getattr(awaitable, "cr_await", None) or getattr(awaitable, "gi_yieldfrom",
                                                                    None)
    return frames


def aborted_by(error: BaseException) -> str:
    """`called sys.exit('no config')`, said of what env code raised."""
    if isinstance(error, SystemExit):
        return f"called sys.exit({error.code!r}) (SystemExit)"
    return (f"raised {type(error).__name__}({str(error)!r}), a BaseException that is not an "
            "Exception")
