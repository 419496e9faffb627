"""At 80 columns (COLUMNS=80) every line vfcheck prints fits, and nothing is cut mid-word:
the live marks, the task legend, the failures (once, whole), `vfcheck run`'s episode table
and `vfcheck list-checks`, which fits about one screen unless asked for all of it."""

from __future__ import annotations

import io
import re
from types import SimpleNamespace
from typing import Any

import pytest
from rich.console import Console

from vfcheck._shared.findings import EnvReport, Finding, TaskId

KEYS = ["vfc-echo:hello world of long keys", "vfc-echo:ping", "vfc-echo:verifiers and more",
        "vfc-echo:another quite long task key", "vfc-echo:short"]


def console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=80, force_terminal=False, color_system=None), out


def test_the_task_legend_breaks_between_tasks_only() -> None:
    from vfcheck._frontends.outcome_grid import outcome_grid, short_key

    report = EnvReport(id="vfc-echo", findings=[
        Finding("gold", "gold", TaskId(i, k), "passed", "ok") for i, k in enumerate(KEYS)])
    lines = outcome_grid(report).legend_lines(80)
    assert len(lines) > 1 and all(len(line) <= 80 for line in lines)
    text = " ".join(line.strip() for line in lines)
    for i, key in enumerate(KEYS):
        assert f"{i} {short_key(key)}" in text  # each task whole, on one line


def test_failures_are_printed_once_whole_with_no_cut_message_column() -> None:
    from vfcheck._frontends.report import show_reports

    message = ("env 'vfc-broken-gold', task 1 (vfc-echo:ping): gold failed — Task.validate "
               "returned False. Contract: Task.validate accepts the task's own reference "
               "solution.")
    report = EnvReport(id="vfc-broken-gold", findings=[
        Finding("gold", "gold", TaskId(1, "vfc-echo:ping"), "failed", message)])
    screen, out = console()
    show_reports(screen, [report])
    text = out.getvalue()
    assert "message" not in text and "…" not in text
    assert text.count("Task.validate returned False") == 1
    assert f"gold[1] FAILED: {message}" in text


def test_the_live_marks_continue_below_not_mid_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from vfcheck._frontends.cli import _follow

    findings = {(f"c{i}", i): Finding(f"c{i}", "f", None, "passed", "ok") for i in range(150)}
    log = SimpleNamespace(poll=lambda: None, findings=findings, final=True)
    check = SimpleNamespace(env_id="vfc-echo", log=log, join=lambda timeout: None)
    screen, out = console()
    _follow(screen, check, lambda: None, verbose=False)
    lines = out.getvalue().splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert lines[0].startswith("vfc-echo ") and lines[1].startswith(" " * 9 + ".")
    assert "".join(line.replace("vfc-echo", "").strip() for line in lines) == "." * 150


def test_the_run_table_breaks_no_key_mid_word() -> None:
    from vfcheck._frontends.run_report import episode_table

    results = [SimpleNamespace(
        task=SimpleNamespace(index=i, key=k), rollout=0, reward=1.0, duration=0.47,
        traces=[SimpleNamespace(stop_condition="agent_completed")], errors=lambda: [])
        for i, k in enumerate(KEYS)]
    summary: Any = SimpleNamespace(env_id="vfc-echo", results=results)
    screen, out = console()
    screen.print(episode_table(summary))
    cells = [re.split(r"[│┃]", line)[2].strip() for line in out.getvalue().splitlines()
             if line.count("│") > 2]
    words = " ".join(cells).split()
    for key in KEYS:
        for word in key.split():
            assert word in words or any(w.endswith("…") and word.startswith(w[:-1])
                                        for w in words), (word, words)


def test_list_checks_fits_a_screen_unless_asked_for_all(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from vfcheck._frontends.cli import main
    from vfcheck.checks import CATALOGUE

    monkeypatch.setenv("COLUMNS", "80")
    assert main(["list-checks"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) <= len(CATALOGUE) + 3 and all(len(line) <= 80 for line in lines)
    assert lines[-1].startswith("--all: what fails each check")
    assert main(["list-checks", "--all"]) == 0
    assert len(capsys.readouterr().out.splitlines()) > 3 * len(CATALOGUE)
