"""The unit tier's promise, kept by the tier itself: no process is started and verifiers is
not imported while a unit test is collected or runs. Either makes a test fail here in one
line naming what it tried, so a test that needs them moves to tests/integration instead of
slowing the inner loop down unnoticed.

The guard holds for the unit tests only (hook wrappers on their collection and their
setup and call), so a run of both tiers in one process is unaffected: verifiers modules that
an integration test imported are hidden from `sys.modules` while a unit test runs, and
put back after."""

from __future__ import annotations

import _posixsubprocess  # type: ignore[import-not-found]
import os
import platform
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent

# the openai SDK reads `platform.processor()` for its headers, which runs `uname -p` once per
# process: answer it before the guard is up, as any earlier test of the process would have.
platform.processor()

SPAWNERS = ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system")


class UnitTierViolation(RuntimeError):
    """A unit test started a process or imported verifiers."""


def _refuse(what: str) -> Any:
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise UnitTierViolation(
            f"the unit tier starts no process ({what}); move this test to tests/integration")
    return refused


class _NoVerifiers(MetaPathFinder):
    """Refuses verifiers while a unit test runs (`active`), and only then: pytester restores
    the `sys.meta_path` it saw at its setup, this finder in it, after the test is over."""

    active = 0

    def find_spec(self, name: str, path: Any = None, target: ModuleType | None = None
                  ) -> ModuleSpec | None:
        if self.active and (name == "verifiers" or name.startswith("verifiers.")):
            raise UnitTierViolation(
                f"the unit tier imports no verifiers (import {name}); move this test to "
                "tests/integration")
        return None


_NO_VERIFIERS = _NoVerifiers()
_HIDDEN: dict[str, ModuleType] = {}
"""Every verifiers module a unit test's guard hid from `sys.modules` (and put back)."""


def _is_verifiers(name: str) -> bool:
    return name == "verifiers" or name.startswith("verifiers.")


@contextmanager
def unit_tier() -> Iterator[None]:
    hidden = {name: sys.modules.pop(name) for name in list(sys.modules) if _is_verifiers(name)}
    _HIDDEN.update(hidden)
    finder = _NO_VERIFIERS
    finder.active += 1
    sys.meta_path.insert(0, finder)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(subprocess.Popen, "__init__", _refuse("subprocess"))
        patch.setattr(_posixsubprocess, "fork_exec", _refuse("fork_exec"))
        for name in SPAWNERS:
            if hasattr(os, name):
                patch.setattr(os, name, _refuse(f"os.{name}"))
        try:
            yield
        finally:
            finder.active -= 1
            sys.meta_path.remove(finder)
            for name in [n for n in sys.modules if _is_verifiers(n)]:
                del sys.modules[name]  # a half import the guard refused
            sys.modules.update(hidden)


def _in_unit_tier(path: Path | None) -> bool:
    return path is not None and HERE in path.resolve().parents


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[None]:
    if not isinstance(collector, pytest.Module) or not _in_unit_tier(collector.path):
        return (yield)
    with unit_tier():
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    with unit_tier():
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    with unit_tier():
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    """pytester's teardown puts back the `sys.modules` it saw at its setup, inside the guard:
    without the verifiers modules the guard hid. Put them back, so that a later integration
    test of this process finds the verifiers the rest of vfcheck imported, not a second one."""
    try:
        return (yield)
    finally:
        for name, module in _HIDDEN.items():
            sys.modules.setdefault(name, module)
