"""Files env code leaves behind in the temp dir or the home: what `hygiene.files` reports.

Two ways in, both of this worker only, so that several envs checked at once never share
the blame:
- the worker's own temp dir (`private_tempdir`): TMPDIR, for the worker and everything it
  starts, is a dir inside the worker's work dir, so whatever is left in it is this env's;
- an audit hook (PEP 578: the `open` event with `O_CREAT`, and `os.mkdir`) notes each path
  env code in this process creates, and the hook, task and file:line that did (a literal
  `/tmp/...` path too). Files a process env code started writes outside the private temp
  dir are out of sight.
Only what still exists after the runners closed counts, and only under the temp dirs or
HOME (the worker's own, `vfcheck._isolation.workdirs`), outside verifiers' runtime work
dirs (`~/.cache/verifiers/`), which verifiers removes itself.
"""

from __future__ import annotations

import contextlib
import os
import sys
import sysconfig
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from vfcheck._host.crash_site import CRASH_SITES
from vfcheck._host.env_code import display_path, frames_of, hook_of

PRIVATE_NAME = "tmp"
"""The private temp dir's name inside the worker's work dir."""
OWNED_BY_VERIFIERS = Path(".cache", "verifiers")
"""Under HOME: verifiers' runtime work dirs and program copies, which it removes itself."""
PYCACHE = f"{os.sep}__pycache__"
"""Python writes bytecode caches beside a module imported in a hook: not env code's files."""
NOT_THE_ENVS = ("uv-",)
"""Names uv gives what it keeps in the temp dir (its locks): harness programs' runner's, not
env code's."""


@dataclass(frozen=True)
class Made:
    """Who created a path: the hook (None: not seen, a process below the worker), its
    task's index, and the env code's file:line."""

    hook: str | None = None
    index: int | None = None
    at: str | None = None


@dataclass(frozen=True)
class LeftFile:
    path: str
    """As shown: `<temp dir>/name`, `~/name`."""
    made: Made
    entries: int = 0
    """What a left dir holds (files and dirs, recursively)."""


class FileWrites:
    """The paths env code created in this process, and the roots a leftover is looked for
    under. `watch()` installs the audit hook (once: audit hooks cannot be removed)."""

    def __init__(self) -> None:
        self.made: dict[str, Made] = {}
        self.watching = False
        self.installed = False
        self.temp_roots: tuple[str, ...] = ()
        self.private: str | None = None
        self.home: str | None = None
        self.unit_of: Callable[[], tuple[str, int | None] | None] = lambda: None
        self._inside = threading.local()
        """Set while this thread looks up who made a path (its own opens do not count)."""

    def watch(self, unit_of: Callable[[], tuple[str, int | None] | None] = lambda: None,
              ) -> None:
        """Note env code's creations from now on (`CRASH_SITES` knows the env's code);
        `unit_of()`: the check unit running here (the worker's), for the task's index
        when no hook of a task is on the stack."""
        self.unit_of = unit_of
        self.watching = True
        if not self.installed:
            sys.addaudithook(self._on_event)
            self.installed = True

    def stop(self) -> None:
        self.watching = False

    def _on_event(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.watching:
            return
        if event == "open":
            path, flags = args[0], args[2]
            if not isinstance(flags, int) or not flags & os.O_CREAT:
                return
        elif event == "os.mkdir":
            path = args[0]
        else:
            return
        if not isinstance(path, str | bytes | os.PathLike):
            return  # a file descriptor
        if getattr(self._inside, "on", False):
            return  # what the lookup below opens is not env code's
        self._inside.on = True
        try:
            made = os.path.abspath(os.fsdecode(path))
            if PYCACHE not in made:  # an import's bytecode cache, not the env's file
                self._note(made)
        except Exception:  # noqa: BLE001 - an observer must never fail env code's open
            pass
        finally:
            self._inside.on = False

    def _note(self, path: str) -> None:
        if path in self.made:
            return
        stack = frames_of(sys._getframe(2))
        if _written_by_verifiers(stack):
            return
        frames = [f for f in stack if CRASH_SITES.is_env(f.f_code.co_filename)]
        if not frames:
            return
        kinds = CRASH_SITES.hook_kinds()
        hook = next((h for f in reversed(frames) if (h := hook_of(f, kinds)) is not None),
                    None)
        unit = self.unit_of()
        index = hook[2] if hook is not None and hook[2] is not None else (
            unit[1] if unit is not None else None)
        inner = frames[-1]
        self.made[path] = Made(hook[0] if hook else f"env code ({inner.f_code.co_name})",
                               index, f"{display_path(inner.f_code.co_filename)}:"
                               f"{inner.f_lineno}")

    def left(self) -> list[LeftFile]:
        """What env code left: noted paths that still exist under the temp dirs or HOME,
        and whatever else is in the private temp dir; a dir once, not its contents."""
        found: dict[str, Made] = {}
        for path, made in self.made.items():
            if os.path.lexists(path) and self._watched(path):
                found[path] = made
        if self.private is not None:
            with contextlib.suppress(OSError):
                for entry in os.scandir(self.private):
                    if entry.path not in found and not entry.name.startswith(NOT_THE_ENVS):
                        found[entry.path] = Made()
        tops = [p for p in sorted(found) if not any(
            p.startswith(os.path.join(q, "")) for q in found if q != p)]
        return [LeftFile(self.shown(p), found[p], _entries(p)) for p in tops]

    def _watched(self, path: str) -> bool:
        if self.home is not None and _under(path, self.home):  # inside the system temp dir
            return not _under(path, os.path.join(self.home, OWNED_BY_VERIFIERS))
        return any(_under(path, r) for r in self.temp_roots)

    def shown(self, path: str) -> str:
        """`<temp dir>/name` for the private or system temp dir, `~/name` under HOME."""
        for root, name in ((self.private, "<temp dir>"), (self.home, "~"),
                           *((r, r) for r in self.temp_roots)):
            if root and _under(path, root):
                rest = os.path.relpath(path, root)
                return name if rest == "." else f"{name}/{rest}"
        return path


_PATHS = sysconfig.get_paths()
_STDLIB = tuple(os.path.join(_PATHS[k], "") for k in ("stdlib", "platstdlib"))
_SITE = tuple(os.path.join(_PATHS[k], "") for k in ("purelib", "platlib"))
"""In a venv, platstdlib holds site-packages: a frame there is a package's, not stdlib's."""


def _written_by_verifiers(stack: list[FrameType]) -> bool:
    """Whether the innermost frame outside the standard library is verifiers' (or vfcheck's):
    what verifiers writes while env code is on the stack (its cache dirs under HOME, a tool
    server's port file) is the library's, not the env's."""
    for frame in reversed(stack):
        filename = frame.f_code.co_filename
        if filename.startswith("<") or (
                filename.startswith(_STDLIB) and not filename.startswith(_SITE)):
            continue
        return filename.startswith(_library_roots())
    return False


def _library_roots() -> tuple[str, ...]:
    roots = []
    for package in ("verifiers", "vfcheck", "vfcheck_chat"):
        module = sys.modules.get(package)
        if module is not None and module.__file__:
            roots.append(os.path.join(os.path.dirname(module.__file__), ""))
    return tuple(roots)


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(os.path.join(root, ""))


def _entries(path: str) -> int:
    if not os.path.isdir(path) or os.path.islink(path):
        return 0
    return sum(len(dirs) + len(files) for _, dirs, files in os.walk(path))


FILE_WRITES = FileWrites()
"""This worker's record."""


@contextlib.contextmanager
def private_tempdir(workdir: Path) -> Iterator[Path]:
    """TMPDIR (and `tempfile`'s cached choice) is `<workdir>/tmp` in the body, for this
    process and all it starts; the system temp dirs stay watched (`FILE_WRITES`)."""
    system = tempfile.gettempdir()
    folder = workdir / PRIVATE_NAME
    folder.mkdir(parents=True, exist_ok=True)
    saved = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(folder)
    tempfile.tempdir = None
    FILE_WRITES.private, FILE_WRITES.home = str(folder), str(workdir)
    FILE_WRITES.temp_roots = tuple(dict.fromkeys(
        form for r in (system, "/tmp", "/var/tmp") if os.path.isdir(r)
        for form in (os.path.abspath(r), os.path.realpath(r))))
    try:
        yield folder
    finally:
        if saved is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = saved
        tempfile.tempdir = None
