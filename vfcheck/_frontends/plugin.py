"""The pytest plugin (entry point `vfcheck`, so `-p no:vfcheck` turns it off).

It stays thin and cheap: registering options imports the option table
(`vfcheck._options.table`, standard library only) and nothing of verifiers, openai, respx or
rich. Only `--vf-env` loads the front end (`vfcheck._frontends.pytest_session`), which still never
imports verifiers: env code runs in supervised worker processes.
"""

from __future__ import annotations

import warnings

import pytest

SESSION_PLUGIN = "vfcheck-session"
LOOP_SCOPE = "asyncio_default_fixture_loop_scope"


def pytest_addoption(parser: pytest.Parser) -> None:
    from vfcheck._options.table import add_pytest_options

    add_pytest_options(parser.getgroup("vfcheck", "verifiers env conformance (vfcheck)"))


def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser) -> None:
    """pytest-asyncio, which vfcheck brings into a user's project, warns in every run of a
    project that leaves its fixture loop scope unset. Unset means "the fixture's own scope";
    vfcheck makes that the default, in the value pytest-asyncio offers for it, so the run is
    quiet and behaves as before. A project's own setting still wins. A pytest-asyncio
    without that value only gets its warning about the unset option filtered out."""
    if not early_config.pluginmanager.has_plugin("asyncio"):
        return
    from pytest_asyncio import plugin as asyncio_plugin

    match_fixture_scope = getattr(asyncio_plugin, "_MATCH_FIXTURE_SCOPE", None)
    if match_fixture_scope is None:
        warnings.filterwarnings("ignore", f'The configuration option "{LOOP_SCOPE}" is unset',
                                pytest.PytestDeprecationWarning)
        return
    parser.addini(LOOP_SCOPE, "default scope of the asyncio event loop used to execute async "
                  f"fixtures (vfcheck's default: {match_fixture_scope})", type="string",
                  default=match_fixture_scope)


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
