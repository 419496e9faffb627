"""The unit tier's guard can fail: a process started or verifiers imported in a unit test
is refused in one line that says where the test belongs."""

from __future__ import annotations

import asyncio
import importlib
import os
import subprocess
import sys

import pytest

from unit.conftest import UnitTierViolation


def test_a_subprocess_is_refused() -> None:
    with pytest.raises(UnitTierViolation, match="move this test to tests/integration"):
        subprocess.run([sys.executable, "-c", "pass"], check=False)


def test_fork_and_spawn_are_refused() -> None:
    with pytest.raises(UnitTierViolation, match=r"os\.fork"):
        os.fork()
    with pytest.raises(UnitTierViolation, match=r"os\.posix_spawn"):
        os.posix_spawn(sys.executable, [sys.executable, "-c", "pass"], dict(os.environ))


def test_an_asyncio_subprocess_is_refused() -> None:
    async def start() -> None:
        await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")

    with pytest.raises(UnitTierViolation):
        asyncio.run(start())


def test_importing_verifiers_is_refused_and_leaves_no_half_import() -> None:
    with pytest.raises(UnitTierViolation, match="import verifiers"):
        importlib.import_module("verifiers.v1")
    assert not any(name.split(".")[0] == "verifiers" for name in sys.modules)
