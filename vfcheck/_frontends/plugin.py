"""The pytest plugin (entry point `vfcheck`, so `-p no:vfcheck` turns it off).

It stays thin and cheap: registering options imports the option table
(`vfcheck._options.table`, standard library only) and nothing of verifiers, openai, respx or
rich. Only `--vf-env` loads the front end (`vfcheck._frontends.pytest_session`), which still never
imports verifiers: env code runs in supervised worker processes.
"""

from __future__ import annotations

import pytest

SESSION_PLUGIN = "vfcheck-session"


def pytest_addoption(parser: pytest.Parser) -> None:
    from vfcheck._options.table import add_pytest_options

    add_pytest_options(parser.getgroup("vfcheck", "verifiers env conformance (vfcheck)"))


@pytest.hookimpl(wrapper=True)
def pytest_cmdline_main(config: pytest.Config) -> object:
    """`pytest -n N` on several envs: `--dist loadscope` unless the user chose a mode, so
    that each env is checked on the xdist worker that runs its items (an env's items are
    one scope) and the workers share the envs; the user's own tests go by module. A
    wrapper, to run before xdist turns `-n` without `--dist` into `--dist load`."""
    option = config.option
    if (len(getattr(option, "vf_env", None) or []) > 1 and getattr(option, "numprocesses", None)
            and getattr(option, "dist", None) == "no" and not getattr(option, "distload", False)):
        option.dist = "loadscope"
    return (yield)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "vfcheck(family): an item made by vfcheck")
    if not (config.getoption("vf_env") or config.getoption("vf_library")):
        return
    from vfcheck._frontends.pytest_session import VfcheckSession

    config.pluginmanager.register(VfcheckSession(config), SESSION_PLUGIN)
