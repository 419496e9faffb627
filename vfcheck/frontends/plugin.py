"""The pytest plugin (entry point `vfcheck`, so `-p no:vfcheck` turns it off).

It stays thin and cheap: registering options imports nothing of verifiers, openai, respx
or rich. Only `--vf-env` loads the front end (`vfcheck.frontends.pytest_session`), which still never
imports verifiers: env code runs in supervised worker processes.
"""

from __future__ import annotations

import pytest

SESSION_PLUGIN = "vfcheck-session"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("vfcheck", "verifiers env conformance (vfcheck)")
    add = group.addoption
    add("--vf-env", action="append", default=[], metavar="ID",
        help="check this verifiers env (repeatable)")
    add("--vf-env-arg", action="append", default=[], metavar="KEY=VALUE",
        help="env config value, e.g. num_tasks=5 (dotted keys address the env config)")
    add("--vf-path", action="append", default=[], metavar="DIR",
        help="folder holding env modules, put on sys.path and PYTHONPATH")
    add("--vf-num-tasks", type=int, default=None, metavar="N",
        help="tasks to load (needed for an infinite taskset)")
    add("--vf-checks", default=None, metavar="A,B", help="families to run (exact names)")
    add("--vf-sample", type=int, default=None, metavar="K",
        help="tasks sampled by the episode families (default 3)")
    add("--vf-timeout", type=float, default=None, metavar="S",
        help="timeout per check, seconds (default 60)")
    add("--vf-harness", choices=("env", "fast"), default=None,
        help="harness tier (default: fast)")
    add("--vf-script", default=None, metavar="FILE", help="the user's script file (TOML)")
    add("--vf-seed", type=int, default=None, help="seed of the default script")
    add("--vf-json", default=None, metavar="FILE", help="write the JSON report")
    add("--vf-library", action="store_true", default=False,
        help="check the installed verifiers against the contracts vfcheck relies on")
    add("--vf-no-baseline", action="store_true", default=False,
        help="with --vf-library: report known behaviours as failed, not expected")
    add("--vf-golden-dir", default=None, metavar="DIR",
        help="where golden traces live (default: golden/ beside pyproject.toml); "
             "--snapshot-update writes them")
    add("--vf-golden-strict", action="store_true", default=None,
        help="a missing or unused golden trace fails (CI, once recorded)")
    add("--vf-wheels", default=None, metavar="DIR",
        help="folder of wheels the harness programs resolve their dependencies from, "
             "with no package index (fill it with: vfcheck wheels DIR ENV)")
    add("--vf-only", action="append", default=[], metavar="ITEM",
        help="run only these items, e.g. 'gold[1]' or 'lifecycle' (repeatable)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "vfcheck(family): an item made by vfcheck")
    if not (config.getoption("vf_env") or config.getoption("vf_library")):
        return
    from vfcheck.frontends.pytest_session import VfcheckSession

    config.pluginmanager.register(VfcheckSession(config), SESSION_PLUGIN)
