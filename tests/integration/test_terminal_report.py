"""The compact terminal report of `vfcheck check` (pytest's: counts, a grid of marks, rows
only for failures; `-v` for every row) and the Markdown step summary for GitHub Actions."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from vfcheck.findings import EnvReport, Finding, TaskId
from vfcheck.frontends.outcome_grid import outcome_grid, short_key
from vfcheck.frontends.report import compact_lines
from vfcheck.frontends.step_summary import append_step_summary, summary_markdown

HASH = "95d61e5293b9fcefcee98fd5e71c3a1ced6d5c033c97300878016badff91976e"


def report_of(rows: list[tuple[str, str, int | None, str]], env_id: str = "vfc-x") -> EnvReport:
    """(check, family, task index, outcome) rows; task i's key is `key-i`, task 7's a hash."""
    findings = [Finding(check, family, None if index is None else TaskId(
        index, HASH if index == 7 else f"key-{index}"), outcome, f"{check} said {outcome}")
        for check, family, index, outcome in rows]
    return EnvReport(id=env_id, findings=findings)  # type: ignore[arg-type]


def test_a_hash_key_shows_its_first_8_characters_and_long_keys_are_cut() -> None:
    assert short_key(HASH) == HASH[:8]
    assert short_key(f"env:{HASH}") == f"env:{HASH[:8]}"
    assert short_key("vfc-echo:hello world") == "vfc-echo:hello world"
    assert short_key("x" * 50, limit=10) == "x" * 9 + "…"


def test_the_grid_has_a_mark_per_check_in_each_family_and_task_cell() -> None:
    env = report_of([("load", "load", None, "passed"), ("setup", "setup", 0, "passed"),
                     ("setup", "setup", 7, "failed"), ("exploit.a", "exploit", 0, "passed"),
                     ("exploit.b", "exploit", 0, "error"), ("exploit.a", "exploit", 7,
                                                            "skipped"),
                     ("hygiene.processes", "hygiene", None, "expected")])
    lines = compact_lines(env)
    assert lines[0] == "vfc-x: 1 failed, 1 error, 3 passed, 1 skipped, 1 expected"
    assert lines[1:] == [
        "  family   env  0   7",
        "  load     .",
        "  setup         .   F",
        "  exploit       .E  s",
        "  hygiene  x",
        f"  tasks: 0 key-0 · 7 {HASH[:8]}",
    ]


def test_grid_columns_that_do_not_fit_continue_below() -> None:
    env = report_of([("setup", "setup", i, "passed") for i in range(30)])
    lines = outcome_grid(env).lines(width=40)
    assert all(len(line) <= 40 for line in lines)
    headers = [line for line in lines if line.lstrip().startswith("family")]
    rows = [line for line in lines if line.lstrip().startswith("setup")]
    assert len(headers) == len(rows) > 1  # a header and the family's row per block
    assert headers[0].split()[1:3] == ["0", "1"]
    assert sum(len(h.split()) - 1 for h in headers) == 30  # every task, once
    assert sum(row.count(".") for row in rows) == 30


def test_the_step_summary_is_markdown_with_env_text_escaped(tmp_path: Path) -> None:
    env = report_of([("load", "load", None, "passed"), ("gold", "gold", 1, "failed")],
                    env_id="vfc-<b>|x")
    env.findings[1].message = "env 'x': <script>alert(1)</script> | pipe\nsecond line"
    text = summary_markdown([env])
    assert "| env | failed | error | passed | skipped | expected |" in text
    assert "| vfc-&lt;b&gt;\\|x | 1 | 0 | 1 | 0 | 0 |" in text
    assert "| gold |  | `F` |" in text
    assert "- `gold[1]` failed: &lt;script&gt;alert(1)&lt;/script&gt; \\| pipe\n" in text
    assert "<script>" not in text and "second line" not in text  # the first line only
    target = tmp_path / "summary.md"
    target.write_text("earlier step\n")
    assert append_step_summary([env], {"GITHUB_STEP_SUMMARY": str(target)}) == target
    assert target.read_text().startswith("earlier step\n## vfcheck\n")  # appended
    assert append_step_summary([env], {}) is None


def vfcheck(*args: str, cwd: Path, env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vfcheck", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "COLUMNS": "100", **(env or {})},
                          stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def gold_run(fixtures_dir: Path, tmp_path_factory: pytest.TempPathFactory
             ) -> tuple[subprocess.CompletedProcess[str], Path]:
    """One `vfcheck check` of the gold family on vfc-broken-gold (gold[1] fails, gold[2]
    skips), with a step summary file."""
    where = tmp_path_factory.mktemp("compact")
    summary = where / "step-summary.md"
    done = vfcheck("check", "vfc-broken-gold", "--path", str(fixtures_dir), "--checks", "gold",
                   cwd=where, env={"GITHUB_STEP_SUMMARY": str(summary)})
    return done, summary


@pytest.mark.slow
def test_check_prints_counts_a_grid_and_only_the_failing_rows(
        gold_run: tuple[subprocess.CompletedProcess[str], Path]) -> None:
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
    assert lines[-1] == "vfcheck: 1 failed, 2 passed, 1 skipped (1 env)"


@pytest.mark.slow
def test_check_appends_a_step_summary_when_github_asks(
        gold_run: tuple[subprocess.CompletedProcess[str], Path]) -> None:
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
