"""`vfcheck init` (`vfcheck._frontends.scaffold`): vfcheck added to an env package, idempotently,
never overwriting what the user wrote; afterwards `pytest --vf-env ENV` passes there."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT
from unit.test_init import package

from vfcheck import __version__
from vfcheck._frontends.scaffold import WORKFLOW_PATH

# ------------------------------------------------------------------ end to end


def run(*command: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(command), cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, env=dict(os.environ))


@pytest.mark.slow
def test_init_then_pytest_passes_in_the_package(fixtures_dir: Path, tmp_path: Path) -> None:
    root = package(tmp_path, module=None)
    shutil.copy(fixtures_dir / "vfc_echo.py", root / "vfc_echo.py")
    done = run(sys.executable, "-m", "vfcheck", "init", cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        "env 'vfc-echo': the project's name (name others: vfcheck init ENV...)",
        'pyproject.toml: [tool.vfcheck] envs = ["vfc-echo"], paths = ["."]',
        ".github/workflows/vfcheck.yml: written (vfcheck check, reports uploaded as an "
        f"artifact); it installs vfcheck from the package index: pip install -e . "
        f"vfcheck=={__version__} (another source: vfcheck init --install index|git+URL|PATH)",
        ".github/workflows/vfcheck.yml: vfcheck here was installed from "
        f"{ROOT}, which CI cannot reach: the workflow installs it from the package index; if "
        "it is not there, run vfcheck init --install git+URL (or a path in the package)",
        "golden/vfc-echo: recording golden traces (vfcheck check vfc-echo --checks golden "
        "--golden-update) ...",
        "golden/vfc-echo: 2 golden trace(s) recorded",  # the user's `sample = 2`
        "next: pytest --vf-env vfc-echo  (or: vfcheck check); then commit pyproject.toml, "
        ".github/workflows/vfcheck.yml and the golden traces",
    ]
    workflow = (root / WORKFLOW_PATH).read_text()
    for words in (f"pip install -e . vfcheck=={__version__}", "vfcheck check --golden-strict",
                  "--junit-xml vfcheck.xml", "--json vfcheck.json", "--html vfcheck.html",
                  "actions/upload-artifact@v4"):
        assert words in workflow
    files = {path: path.read_bytes() for path in root.rglob("*") if path.is_file()}

    again = run(sys.executable, "-m", "vfcheck", "init", cwd=root)
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.splitlines()[-1] == (
        "nothing to change: vfcheck is set up here. Run: pytest --vf-env vfc-echo")
    assert {path: path.read_bytes() for path in root.rglob("*") if path.is_file()} == files

    # the workflow's command (no env named: pyproject.toml's), golden traces held strictly
    checked = run(sys.executable, "-m", "vfcheck", "check", "--checks", "golden",
                  "--golden-strict", cwd=root)
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-2000:]
    assert "envs vfc-echo" in checked.stdout
    # and every check passes (the two known echo findings are the user's `allow`)
    tested = run(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--vf-env",
                 "vfc-echo", cwd=root)
    assert tested.returncode == 0, tested.stdout[-4000:]
    assert re.search(r"\d+ passed", tested.stdout) and not re.search(r"\d+ (failed|error)",
                                                                    tested.stdout)
