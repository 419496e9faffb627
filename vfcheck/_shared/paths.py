"""Paths as vfcheck shows them and where it may write: no dependency of its own, so that
every layer (options, traces, front ends) can ask."""

from __future__ import annotations

import os
from pathlib import Path


def shown_path(path: Path) -> str:
    """`path` relative to the working directory when it is below it (messages, reports)."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def write_refusal(path: Path, root: Path) -> str | None:
    """Why golden traces may not be written at `path` (a file or folder), or None: only
    below `root` (`CheckOptions.golden_write_root`), links resolved."""
    target, allowed = path.resolve(), root.resolve()
    if target == allowed or allowed in target.parents:
        return None
    return (f"vfcheck will not write {target}: it is outside {allowed}, where this run may "
            "write golden traces (to write there, name the folder: --vf-golden-dir DIR, "
            "--golden-dir DIR or [tool.vfcheck] golden_dir)")


def unwritable(path: Path, *, folder: bool = False) -> str | None:
    """Why a file (`folder`: a folder to write in) cannot be written at `path`; None if it
    can. Missing folders above it are made when it is written. Permissions are tried, not
    read: `os.access` says yes to root everywhere, also on a read-only file system or in
    `/proc`, where the write fails after the run."""
    if path.exists():
        if path.is_dir() != folder:
            return "it is a folder" if path.is_dir() else "it is not a folder"
        if not os.access(path, os.W_OK):
            return "it is not writable"
        if folder:
            return _cannot_create_in(path, f"the folder {path}")
        try:  # appends nothing: the file stays as it is (a FIFO with no reader: ENXIO)
            os.close(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK))
        except OSError as e:
            return f"it is not writable ({e.strerror or e})"
        return None
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        return f"{parent} is not a folder"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"the folder {parent} is not writable"
    return _cannot_create_in(parent, f"the folder {parent}")


def _cannot_create_in(folder: Path, name: str) -> str | None:
    """Why no file can be created in `folder` (an unnamed temporary one is tried), or None."""
    import tempfile

    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as e:
        return f"{name} is not writable ({e.strerror or e})"
    return None


def write_atomically(path: Path, content: str | bytes) -> None:
    """Write `path` whole or not at all: an interrupted write never leaves half a report
    behind (a temporary file beside it, then a rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    try:
        if isinstance(content, bytes):
            tmp.write_bytes(content)
        else:
            tmp.write_text(content, encoding="utf-8")
        tmp.replace(path)
    except BaseException:  # a Ctrl-C mid-write: the report before stays, the half goes
        tmp.unlink(missing_ok=True)
        raise
