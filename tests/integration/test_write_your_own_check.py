"""docs/write-your-own-check.md, run as a reader follows it (the machinery of
test_write_your_own_env): a user's package with a check family of its own, installed, is
listed, run, fails where its contract is broken and passes once the env is fixed.

`pip install -e .` is run as `pip install --no-deps --no-build-isolation --target SITE .`
and SITE is put on PYTHONPATH for the commands after it: the package is installed as a
user's (its metadata, its `vfcheck.checks` entry point), without touching this test run's
own environment, where every other test would then load it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT, vfcheck

from .test_write_your_own_env import blocks, run_page

PAGE = ROOT / "docs" / "write-your-own-check.md"


def test_the_page_is_complete() -> None:
    """Cheap, no process: the page holds the package, its entry point, an install, a
    failure and the fix."""
    found = blocks(PAGE)
    assert {b.title for b in found if b.lang in ("python", "toml")} == {
        "pyproject.toml", "price_env.py", "price_env_checks.py"}
    pyproject = next(b.body for b in found if b.title == "pyproject.toml")
    assert '[project.entry-points."vfcheck.checks"]' in pyproject
    checks = next(b.body for b in found if b.title == "price_env_checks.py")
    assert "from vfcheck import CheckContext, Finding, check, family" in checks
    commands = [line for b in found if b.lang == "bash" for line in b.body.splitlines()]
    assert commands[0] == "pip install -e ." and "vfcheck list-checks" in commands
    assert any(b.lang == "diff" for b in found)


@pytest.mark.slow
def test_the_page_runs_as_shown(tmp_path: Path) -> None:
    project, site = tmp_path / "price-env", tmp_path / "site"
    project.mkdir()
    installed: dict[str, str] = {}

    def run(args: list[str]) -> subprocess.CompletedProcess[str]:
        if args[:2] == ["pip", "install"]:
            assert args[2:] == ["-e", "."], args
            done = subprocess.run(
                [sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                 "--no-build-isolation", "--target", str(site), "."], cwd=project,
                capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
            installed["PYTHONPATH"] = os.pathsep.join(
                [str(site), *filter(None, [os.environ.get("PYTHONPATH")])])
            return done
        assert args[0] == "vfcheck", args
        return vfcheck(*args[1:], cwd=project, env=installed, timeout=900)

    last = run_page(blocks(PAGE), project, run)
    assert last.returncode == 0, last.stdout[-3000:]  # the fixed reward passes
    assert "vfcheck: 7 passed (1 env)" in last.stdout  # load, and both checks on 3 tasks


@pytest.mark.slow
def test_a_plug_in_that_does_not_import_is_one_line_in_both_front_ends(
        tmp_path: Path, fixtures_dir: Path) -> None:
    """An entry point whose module raises at import: `vfcheck check` and `pytest --vf-env`
    refuse the run in one line naming the entry point, its distribution and the error;
    `vfcheck list-checks` still lists the built-in checks, then says it."""
    site = tmp_path / "site"
    meta = site / "broken_checks-0.1.dist-info"
    meta.mkdir(parents=True)
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-checks\nVersion: 0.1\n")
    (meta / "entry_points.txt").write_text("[vfcheck.checks]\nbroken = broken_checks\n")
    (site / "broken_checks.py").write_text("import a_module_nobody_installed\n")
    env = {"PYTHONPATH": str(site)}
    said = ("the check plug-in 'broken_checks' (entry point 'broken' of broken-checks, group "
            "'vfcheck.checks') failed to import: ModuleNotFoundError: No module named "
            "'a_module_nobody_installed'")
    done = vfcheck("check", "vfc-echo", "--path", str(fixtures_dir), cwd=tmp_path, env=env)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == f"vfcheck: error: {said}"
    listed = vfcheck("list-checks", cwd=tmp_path, env=env)
    assert listed.returncode == 2 and "hygiene.network" in listed.stdout
    assert listed.stderr.strip() == f"vfcheck: error: {said}"
    plugin = subprocess.run(
        [sys.executable, "-m", "pytest", "--vf-env", "vfc-echo", f"--vf-path={fixtures_dir}",
         "-p", "no:cacheprovider"], cwd=tmp_path, capture_output=True, text=True,
        timeout=300, env={**os.environ, **env}, stdin=subprocess.DEVNULL)
    assert plugin.returncode == pytest.ExitCode.USAGE_ERROR
    assert f"ERROR: vfcheck: {said}" in plugin.stderr
    assert "Traceback" not in plugin.stdout + plugin.stderr
