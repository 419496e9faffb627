"""vfcheck brings a user's pytest no plugin its own code does not use, and a user's run
carries no warning that vfcheck causes.

pytest-asyncio used to be a runtime dependency that no module of vfcheck imported: every
user got its plugin, and its warning about an unset `asyncio_default_fixture_loop_scope`,
which vfcheck then silenced through a private name of pytest-asyncio's.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re

import pytest
from support import SOURCE


def imported_top_levels() -> set[str]:
    """Every top-level package a module of vfcheck imports (function-level too)."""
    found: set[str] = set()
    for path in SOURCE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module.split(".")[0])
    return found


def runtime_requirements() -> list[str]:
    """The names of vfcheck's runtime requirements (no extras)."""
    names = []
    for line in importlib.metadata.requires("vfcheck") or []:
        if "extra ==" in line:
            continue
        names.append(re.split(r"[<>=!~;\[ ]", line, maxsplit=1)[0].strip())
    return names


def pytest_plugin_modules(distribution: str) -> list[str]:
    """The top-level modules of the `pytest11` plug-ins `distribution` registers."""
    dist = importlib.metadata.distribution(distribution)
    return [point.value.split(":")[0].split(".")[0] for point in dist.entry_points
            if point.group == "pytest11"]


USED_THROUGH_HOOKS = {
    "pytest-xdist": "`pytest --vf-env A B -n 2` spreads envs over xdist's workers through its "
                    "hooks (vfcheck._frontends.xdist_spread), importing nothing of it",
}
"""Requirements vfcheck uses as pytest plug-ins, with why: nothing to import."""


def test_no_runtime_dependency_is_there_for_its_pytest_plugin_alone() -> None:
    """A requirement that registers a pytest plug-in is one vfcheck's code imports (its
    plug-in comes with a library vfcheck uses: syrupy, respx), or one whose plug-in vfcheck
    itself drives (`USED_THROUGH_HOOKS`), never one that is just there."""
    used = imported_top_levels()
    unused = []
    for name in runtime_requirements():
        if name in USED_THROUGH_HOOKS:
            continue
        plugins = pytest_plugin_modules(name)
        top = {name.replace("-", "_").lower(), *(p.lower() for p in plugins)}
        if plugins and not top & {u.lower() for u in used}:
            unused.append(f"{name} (its pytest plug-in {', '.join(plugins)})")
    assert not unused, ("runtime dependencies that vfcheck's code never imports but that put "
                        "a plug-in into every user's pytest: " + ", ".join(unused))
    assert "pytest-asyncio" not in runtime_requirements()


@pytest.mark.slow
def test_a_users_run_has_no_warning_of_vfchecks(pytester: pytest.Pytester) -> None:
    """A project with no pytest config and vfcheck installed (its plugin loaded, idle):
    nothing but the user's own tests' outcome. pytest-asyncio is off (`-p no:asyncio`), as in
    a user's environment that never asked for it: it is in this suite's dev tier only."""
    pytester.makepyfile(test_user="def test_plain():\n    pass\n")
    result = pytester.runpytest_subprocess("-W", "error", "-p", "no:cacheprovider",
                                           "-p", "no:asyncio")
    result.assert_outcomes(passed=1)
    output = result.stdout.str() + result.stderr.str()
    assert "Warning" not in output and "warnings summary" not in output, output
    assert "vfcheck" in output  # the plugin is there (pytest's header lists it)
