"""A CLI run of the library suite that timed out while other CLIs ran is run again alone
before its timeout counts (`vfcheck._library.clis.fresh_attempt`): a loaded machine must not
turn into `error` findings."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from vfcheck._library.clis import CliRun, fresh_attempt, run_cli

pytestmark = pytest.mark.slow


def env_with(folder: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), *sys.path])}


@pytest.fixture
def scripts(tmp_path: Path) -> Path:
    folder = tmp_path / "mods"
    folder.mkdir()
    (folder / "vfc_cli_probe.py").write_text(
        "import sys, time\n"
        "def slow() -> int:\n    time.sleep(30)\n    return 0\n"
        "def quick() -> int:\n    print('done')\n    return 0\n")
    return folder


async def test_a_timed_out_run_that_finishes_alone_is_its_own_verdict(
        tmp_path: Path, scripts: Path) -> None:
    run = CliRun("probe", "vf-probe", [], tmp_path / "run")
    await run_cli(run, "vfc_cli_probe:slow", env_with(scripts), timeout=0.5)
    assert run.timed_out and run.problem == "vf-probe did not finish within 0.5s"

    await run_cli(fresh_attempt(run), "vfc_cli_probe:quick", env_with(scripts), timeout=30)
    assert (run.returncode, run.problem, run.timed_out) == (0, None, False)
    assert run.outcome() == "exit 0" and run.stdout.strip() == "done"
    assert run.first_attempt == "vf-probe did not finish within 0.5s"


async def test_a_run_that_times_out_twice_says_so(tmp_path: Path, scripts: Path) -> None:
    run = CliRun("probe", "vf-probe", [], tmp_path / "run")
    await run_cli(run, "vfc_cli_probe:slow", env_with(scripts), timeout=0.5)
    (run.cwd / "left-behind").write_text("x")
    await run_cli(fresh_attempt(run), "vfc_cli_probe:slow", env_with(scripts), timeout=0.5)
    assert run.problem == ("vf-probe did not finish within 0.5s, twice, the second time "
                           "alone")
    assert not (run.cwd / "left-behind").exists(), "the second attempt starts in an empty folder"


def test_a_run_that_finished_is_not_marked_as_a_retry(tmp_path: Path) -> None:
    run = CliRun("probe", "vf-probe", [], tmp_path / "run", returncode=1)
    assert fresh_attempt(run).first_attempt is None
