"""The compact terminal report (grid, keys) and the Markdown step summary, from report
data made here."""

from __future__ import annotations

from pathlib import Path

from vfcheck._frontends.outcome_grid import outcome_grid, short_key
from vfcheck._frontends.report import compact_lines
from vfcheck._frontends.step_summary import append_step_summary, summary_markdown
from vfcheck._shared.findings import EnvReport, Finding, TaskId

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


def test_each_env_says_how_its_processes_started_and_the_json_keeps_it() -> None:
    import io

    from rich.console import Console

    from vfcheck._frontends.report import show_reports

    report = report_of([("load", "load", None, "passed")])
    report.starts = {"warm": 4, "cold": 1, "reasons": {"another program": 1},
                     "seconds": {"warm": 0.5}, "zygote": "ready"}
    out = io.StringIO()
    show_reports(Console(file=out, width=200), [report])
    assert ("vfc-x starts: 4 warm (forked from a warm interpreter), 1 cold (1 another "
            "program); tool servers listening after 0.5s warm") in out.getvalue()
    assert EnvReport.from_dict(report.as_dict()).starts == report.starts
