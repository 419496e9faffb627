"""A user's pytest run carries no warning that vfcheck causes: pytest-asyncio, which vfcheck
brings in, warns about an unset `asyncio_default_fixture_loop_scope` in every project that
does not set it, and the plugin settles that itself (never by asking users to configure it),
keeping what unset means and leaving a project's own setting alone."""

from __future__ import annotations

import pytest
from pytest_asyncio import plugin as asyncio_plugin

ASYNC_TESTS = """
import asyncio

import pytest
import pytest_asyncio


@pytest_asyncio.fixture(scope="module")
async def module_loop():
    return asyncio.get_running_loop()


@pytest.mark.asyncio(loop_scope="module")
async def test_a_module_fixture_shares_the_modules_loop(module_loop):
    assert module_loop is asyncio.get_running_loop()


def test_plain():
    pass
"""


@pytest.mark.slow
def test_a_project_with_no_pytest_config_runs_without_a_warning(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user=ASYNC_TESTS)
    result = pytester.runpytest_subprocess("-W", "error::pytest.PytestDeprecationWarning",
                                           "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    output = result.stdout.str() + result.stderr.str()
    assert "Warning" not in output and "warnings summary" not in output, output
    if hasattr(asyncio_plugin, "_MATCH_FIXTURE_SCOPE"):  # else the warning is filtered
        # the default is what unset meant: each async fixture on a loop of its own scope
        assert "asyncio_default_fixture_loop_scope=fixture-scope" in output


@pytest.mark.slow
def test_the_projects_own_loop_scope_wins(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = module\n")
    pytester.makepyfile(test_user=ASYNC_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    assert "asyncio_default_fixture_loop_scope=module" in result.stdout.str()
