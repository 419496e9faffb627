"""Shared test fixtures (where the fixture envs live, verifiers' own fixture envs) and the
tiers' markers: a test is `unit` or `integration` by the folder it is in, so `-m` selects a
tier whatever the command line names."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import FIXTURES, ROOT, CheckCache, check_cache_root

TIERS = {"unit", "integration"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        tier = item.path.parent.name
        if tier in TIERS and item.path.parent.parent == ROOT / "tests":
            item.add_marker(tier)


@pytest.fixture(scope="session")
def checked(tmp_path_factory: pytest.TempPathFactory) -> CheckCache:
    """Check reports shared by the tests of a session (and its xdist workers)."""
    return CheckCache(check_cache_root(tmp_path_factory.getbasetemp()))


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture(scope="session")
def verifiers_fixtures() -> Path:
    """verifiers' own v1 fixture envs (echo-v1, echo-tool-v1, ...) from its sdist:
    `$VFCHECK_VERIFIERS_FIXTURES`, else fetched once by `scripts/verifiers-fixtures`."""
    found = os.environ.get("VFCHECK_VERIFIERS_FIXTURES")
    if not found:
        done = subprocess.run(
            ["bash", str(ROOT / "scripts" / "verifiers-fixtures"), str(ROOT / ".vf-fixtures"),
             sys.executable],
            capture_output=True, text=True, timeout=300,
        )
        if done.returncode != 0:
            pytest.skip(f"verifiers' sdist fixtures unavailable: {done.stderr.strip()[-300:]}")
        found = done.stdout.strip().splitlines()[-1]
    path = Path(found)
    if not (path / "echo_v1.py").exists():
        pytest.skip(f"no echo_v1.py in {path}")
    return path


@pytest.fixture(autouse=True, scope="session")
def _no_step_summary() -> Iterator[None]:
    """The suite's own vfcheck runs append no summary to a CI job's page (GitHub Actions
    sets `GITHUB_STEP_SUMMARY` for the step that runs the tests); session-wide, so that
    module-scoped runs see it unset too."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("GITHUB_STEP_SUMMARY", raising=False)
        yield


@pytest.fixture(autouse=True, scope="session")
def _users_pytest_has_no_asyncio() -> Iterator[None]:
    """The pytest runs this suite starts (pytester, `python -m pytest --vf-env`) are a
    user's: vfcheck does not bring pytest-asyncio, which is in this suite's dev tier only for
    its own async tests. Set once the session's process runs, so it reaches only the runs
    it starts (the xdist workers have already read their options)."""
    addopts = " ".join(filter(None, [os.environ.get("PYTEST_ADDOPTS"), "-p no:asyncio"]))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTEST_ADDOPTS", addopts)
        yield


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester's runs are a user's too (`_users_pytest_has_no_asyncio`); pytester clears
    `PYTEST_ADDOPTS` when it starts, so it is set again here, after it."""
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:asyncio")
    return pytester
