"""The pytest plugin (entry point `vfcheck`, so `-p no:vfcheck` turns it off).

It stays thin and cheap: registering options imports the option table
(`vfcheck.option_table`, standard library only) and nothing of verifiers, openai, respx or
rich. Only `--vf-env` loads the front end (`vfcheck.frontends.pytest_session`), which still never
imports verifiers: env code runs in supervised worker processes.
"""

from __future__ import annotations

import pytest

SESSION_PLUGIN = "vfcheck-session"


def pytest_addoption(parser: pytest.Parser) -> None:
    from vfcheck.option_table import add_pytest_options

    add_pytest_options(parser.getgroup("vfcheck", "verifiers env conformance (vfcheck)"))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "vfcheck(family): an item made by vfcheck")
    if not (config.getoption("vf_env") or config.getoption("vf_library")):
        return
    from vfcheck.frontends.pytest_session import VfcheckSession

    config.pluginmanager.register(VfcheckSession(config), SESSION_PLUGIN)
