"""The compact terminal report of `vfcheck check` (pytest's: counts, a grid of marks, rows
only for failures; `-v` for every row) and the Markdown step summary for GitHub Actions."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import support
from support import BROKEN_GOLD, BROKEN_GOLD_ENV, CheckCache, CheckRun


def vfcheck(*args: str, cwd: Path, env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
    return support.vfcheck(*args, cwd=cwd, env={"COLUMNS": "100", **(env or {})}, timeout=300)


@pytest.fixture(scope="module")
def gold_run(checked: CheckCache) -> tuple[CheckRun, Path]:
    """One `vfcheck check` of the gold family on vfc-broken-gold (gold[1] fails, gold[2]
    skips), with a step summary file; the CLI's tests read the same run."""
    done = checked.check(*BROKEN_GOLD, env=BROKEN_GOLD_ENV)
    return done, done.folder / "step-summary.md"


@pytest.mark.slow
def test_check_prints_counts_a_grid_and_only_the_failing_rows(
        gold_run: tuple[CheckRun, Path]) -> None:
    done, _ = gold_run
    assert done.returncode == 1, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    # the live marks, one per finding as it arrives (in the order the worker ends them)
    live = lines[3]  # below the header: what runs, the rerun line, the concurrency
    assert live.startswith("vfc-broken-gold ")
    assert sorted(live.removeprefix("vfc-broken-gold ")) == sorted(".F.s")
    assert "vfc-broken-gold: 1 failed, 2 passed, 1 skipped" in lines
    assert "  family  env  0  1  2" in lines
    assert "  gold         .  F  s" in lines
    assert "  tasks: 0 vfc-echo:hello world · 1 vfc-echo:ping · 2 vfc-echo:verifiers" in lines
    assert "gold[1] FAILED: env 'vfc-broken-gold', task 1 (vfc-echo:ping)" in done.stdout
    table = done.stdout[done.stdout.index("vfc-broken-gold failures"):]
    assert "gold" in table and "failed" in table
    assert "passed" not in table.split("gold[1] FAILED")[0]  # no passing rows
    summary = lines.index("vfcheck: 1 failed, 2 passed, 1 skipped (1 env)")
    # why gold[2] was skipped, above; the closing lines, what to do next, below
    assert "vfc-broken-gold skipped (1):" in lines[:summary]
    assert lines[summary + 1] == "next: fix the failures above, then run the rerun line again"
    assert " ".join(lines[summary + 2:]).startswith("reports: JSON report ")


@pytest.mark.slow
def test_check_appends_a_step_summary_when_github_asks(
        gold_run: tuple[CheckRun, Path]) -> None:
    _, summary = gold_run
    text = summary.read_text()
    assert text.startswith("## vfcheck\n")
    assert "| vfc-broken-gold | 1 | 0 | 2 | 1 | 0 |" in text
    assert "| gold |  | `.` | `F` | `s` |" in text
    assert "- `gold[1]` failed: gold failed" in text


@pytest.mark.slow
def test_verbose_check_prints_every_row(fixtures_dir: Path, tmp_path: Path) -> None:
    done = vfcheck("check", "vfc-broken-gold", "--path", str(fixtures_dir), "--checks", "gold",
                   "-v", cwd=tmp_path)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "  vfc-broken-gold gold[0] passed" in done.stdout.splitlines()  # live lines
    assert "vfc-broken-gold: 1 failed, 2 passed, 1 skipped" in done.stdout  # table title
    assert "vfc-broken-gold failures" not in done.stdout
    assert done.stdout.count("passed  ") + done.stdout.count("passed │") >= 2  # passing rows
    assert "  family  env  0  1  2" not in done.stdout.splitlines()
