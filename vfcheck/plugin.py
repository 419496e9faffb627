"""The pytest plugin (entry point `vfcheck`, so `-p no:vfcheck` turns it off).

It stays thin and cheap: registering options imports nothing of verifiers, openai, respx
or rich. Only a `--vf-*` option that asks for work loads the rest.
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("vfcheck", "verifiers env conformance (vfcheck)")
    group.addoption("--vf-env", action="append", default=[], metavar="ID",
                    help="check this verifiers env (repeatable)")
    group.addoption("--vf-path", action="append", default=[], metavar="DIR",
                    help="folder holding env modules, put on sys.path and PYTHONPATH")
    group.addoption("--vf-env-arg", action="append", default=[], metavar="KEY=VALUE",
                    help="env config value, e.g. num_tasks=5")
    group.addoption("--vf-harness", choices=("env", "fast"), default=None,
                    help="harness tier (default: fast)")
    group.addoption("--vf-script", default=None, metavar="FILE",
                    help="the user's script file (TOML)")
    group.addoption("--vf-seed", type=int, default=None, help="seed of the default script")
