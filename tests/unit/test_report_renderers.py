"""The report renderers fed a committed JSON report (`data/broken-golden-and-echo.json`: a
real `vfcheck check vfc-broken-golden vfc-echo --checks load,gold,episode,lifecycle,golden,
reward,exploit` of this repository, paths made relative): the HTML page, failures first; the
terminal grid and failure lines; the step summary; JUnit; the probe table."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from vfcheck._frontends.html_report import render_html
from vfcheck._frontends.outcome_grid import outcome_grid
from vfcheck._frontends.probe_table import probe_table
from vfcheck._frontends.report import compact_lines, failure_text, write_junit
from vfcheck._frontends.step_summary import summary_markdown
from vfcheck._frontends.views.golden import golden_summary
from vfcheck._shared.findings import EnvReport

DATA = Path(__file__).parent / "data"
REPORT: dict[str, Any] = json.loads((DATA / "broken-golden-and-echo.json").read_text())
ENVS = [EnvReport.from_dict(env) for env in REPORT["envs"]]
BROKEN, ECHO = ENVS


class Page(HTMLParser):
    """The elements of a page in document order: (tag, attrs, depth of open `details`)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str], list[str]]] = []
        self.open: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {k: v or "" for k, v in attrs}
        self.elements.append((tag, attributes, list(self.open)))
        if tag in ("details", "section"):
            self.open.append(f"{tag}.{attributes.get('class', '')}")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("details", "section") and self.open:
            self.open.pop()

    def findings(self) -> list[tuple[str, str, list[str]]]:
        return [(a["id"], a["class"].split()[1], inside) for tag, a, inside in self.elements
                if tag == "div" and a.get("class", "").startswith("finding ")]


@pytest.fixture(scope="module")
def page() -> Page:
    return Page(render_html(REPORT))


def test_failures_and_errors_come_first_whole_and_the_rest_is_folded(page: Page) -> None:
    findings = page.findings()
    assert len(findings) == sum(len(env.findings) for env in ENVS)  # each finding once
    bad = [f for f in findings if f[1] in ("failed", "error")]
    assert len(bad) == 7
    assert findings[:7] == bad  # first on the page
    assert all(inside == ["section.failures"] for _, _, inside in bad)  # whole, not folded
    rest = findings[7:]
    assert all(inside[-1] == "details.rest" for _, _, inside in rest), rest[:3]
    # the golden diff, on top, in the failing finding
    (sides,) = [i for i, (tag, a, _) in enumerate(page.elements)
                if tag == "table" and a.get("class") == "sides"]
    first_env = next(i for i, (tag, a, _) in enumerate(page.elements)
                     if tag == "section" and a.get("class") == "env")
    assert sides < first_env


def test_every_matrix_cell_links_to_a_finding_on_the_page(page: Page) -> None:
    ids = {a["id"] for _, a, _ in page.elements if "id" in a}
    cells = [a for tag, a, _ in page.elements if tag == "a" and "cell" in a.get("class", "")]
    assert len(cells) == sum(len(env.findings) for env in ENVS)
    assert all(cell["href"].lstrip("#") in ids for cell in cells)


def test_task_headers_show_the_whole_key() -> None:
    html = render_html(REPORT)
    assert "<small>vfc-broken-golden:hello world</small>" in html  # 29 characters, not cut
    long_key = "k" * 80
    report = {"envs": [{"id": "x", "findings": [{
        "check": "gold", "family": "gold", "task": {"index": 0, "key": long_key},
        "outcome": "passed", "message": "ok", "details": {}}]}]}
    html = render_html(report)
    assert f'title="{long_key}"' in html and f"<small>{'k' * 63}…</small>" in html


def test_a_report_with_no_failure_says_so() -> None:
    html = render_html({"envs": [REPORT["envs"][1]]})
    assert "No check failed or errored." in html


def test_the_terminal_grid_and_failure_lines() -> None:
    lines = compact_lines(BROKEN)
    assert lines[0] == "vfc-broken-golden: 7 failed, 33 passed, 4 skipped"
    assert lines[1:9] == [
        "  family     env  0         1         2",
        "  load       .",
        "  gold            .         .         .",
        "  episode         .         .         .",
        "  lifecycle       .         .         .",
        "  golden     s    .         F         .",
        "  reward          ..        ..        ..",
        "  exploit         .F....Fs  .F....Fs  .F....Fs"]
    grid = outcome_grid(BROKEN)
    assert grid.families[:3] == ["load", "gold", "episode"]
    assert grid.legend().startswith("tasks: 0 vfc-broken-golden:hello world · 1 ")
    failures = failure_text(BROKEN)
    assert len(failures) == 7 and failures[0].startswith("golden[1] FAILED: ")
    assert golden_summary(ECHO) == "vfc-echo golden traces: 3 matched in golden/vfc-echo"


def test_the_step_summary_counts_each_env_and_lists_its_failures() -> None:
    text = summary_markdown(ENVS)
    assert "| vfc-broken-golden | 7 | 0 | 33 | 4 | 0 |" in text
    assert "| vfc-echo | 0 | 0 | 35 | 3 | 6 |" in text
    assert "- `golden[1]` failed: golden failed" in text


def test_junit_has_a_testcase_per_finding_and_the_probe_table(tmp_path: Path) -> None:
    write_junit(tmp_path / "r.xml", ENVS)
    suites = ET.parse(tmp_path / "r.xml").getroot().findall("testsuite")
    assert [(s.get("name"), s.get("tests"), s.get("failures")) for s in suites] == [
        ("vfc-broken-golden", "44", "7"), ("vfc-echo", "44", "0")]
    out = suites[0].find("system-out")
    assert out is not None and out.text is not None and "echo-prompt" in out.text


def test_the_probe_table_has_the_oracle_on_top() -> None:
    table = probe_table(ECHO)
    assert table is not None and table.tasks == [0, 1, 2] and table.probes[0] == "oracle"
    assert [table.cell("oracle", t) for t in table.tasks] == ["1", "1", "1"]


def test_a_cut_off_run_is_marked_partial_in_every_report(tmp_path: Path) -> None:
    """An interrupted run (`not_run` units, the signal named): the HTML banner, the step
    summary's first line, JUnit's property and a skipped testcase per unit not run, the
    counts line; the JSON report is not `complete`."""
    from vfcheck._frontends.outcome_grid import counts_text
    from vfcheck._frontends.report import json_report

    cut = EnvReport.from_dict({**REPORT["envs"][1], "not_run": ["gold[1]", "gold[2]"]})
    assert EnvReport.from_dict(cut.as_dict()).not_run == ["gold[1]", "gold[2]"]
    assert counts_text(cut).endswith(", 2 not run")
    data = json_report([cut], verifiers="0.4.0", seed=0, interrupted="SIGTERM")
    assert (data["complete"], data["interrupted"]) == (False, "SIGTERM")
    assert json_report([ECHO], verifiers="0.4.0", seed=0)["complete"] is True
    assert json_report([ECHO], verifiers="0.4.0", seed=0, final=False)["complete"] is False
    assert "Interrupted (SIGTERM): this report is partial.</strong> 2 check(s) not run" in (
        render_html(data))
    assert summary_markdown([cut], "SIGTERM").splitlines()[2] == (
        "> **Interrupted (SIGTERM): this summary is partial**; 2 check(s) not run.")
    write_junit(tmp_path / "r.xml", [cut], interrupted="SIGTERM")
    root = ET.parse(tmp_path / "r.xml").getroot()
    assert root.find("properties/property").attrib == {"name": "interrupted", "value": "SIGTERM"}
    suite = root.find("testsuite")
    assert suite is not None
    assert int(suite.attrib["tests"]) == len(cut.findings) + 2
    skipped = {c.attrib["name"]: c.find("skipped") for c in suite.iter("testcase")}
    assert skipped["gold[2]"] is not None and skipped["gold[2]"].attrib["message"] == (
        "not run: the run was interrupted (SIGTERM)")


def test_a_report_cut_short_while_written_leaves_the_one_before_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """#32 item 2: a report is written atomically. An interrupt in the middle of writing
    (half the text on disk) leaves the previous report as it was, and no half file."""
    from vfcheck._frontends.report import write_json

    path = tmp_path / "report.json"
    write_json(path, {"complete": True, "envs": []})
    before = path.read_text()
    written = Path.write_text

    def half_then_interrupted(self: Path, data: str, *args: Any, **kwargs: Any) -> int:
        written(self, data[: len(data) // 2], *args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(Path, "write_text", half_then_interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_json(path, {"complete": False, "envs": [{"id": "x" * 1000}]})
    monkeypatch.undo()
    assert path.read_text() == before and json.loads(before)["complete"] is True
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]


def test_a_checkpoint_is_written_compact_and_the_final_report_indented(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkpoint of the JSON report is rewritten every second of the run: json's
    `indent` takes its pure-Python encoder (8x slower: 0.12 s for 3,000 findings), so a
    checkpoint is compact, and a report that takes long to write waits longer for the next
    (at most `CHECKPOINT_SHARE` of the front end's time). The final report is for people."""
    import time

    from vfcheck._frontends import report_files
    from vfcheck._frontends.run import CheckRun
    from vfcheck._options.resolved import CheckOptions, RunOptions

    path = tmp_path / "report.json"
    run = CheckRun([], CheckOptions(), RunOptions(json=str(path), junit_xml=None, html=None),
                   front="cli")
    run._write([], final=False)
    assert "\n " not in path.read_text() and json.loads(path.read_text())["envs"] == []
    assert run._checkpoint_every == CheckRun.CHECKPOINT_EVERY
    real = report_files.write_reports

    def slow(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.2)
        return real(*args, **kwargs)

    monkeypatch.setattr(report_files, "write_reports", slow)
    run._write([], final=False)
    assert run._checkpoint_every >= 0.2 / CheckRun.CHECKPOINT_SHARE
    monkeypatch.undo()
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", "")
    run._write([], final=True)
    assert "\n  \"envs\": []" in path.read_text()
