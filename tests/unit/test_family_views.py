"""Each family's presentation is declared once, in its view module
(`vfcheck._frontends.views`), and the front ends ask the views: the header's golden line, the
summary lines, the JSON report's data and the HTML report's episode links."""

from __future__ import annotations

from vfcheck._frontends import views
from vfcheck._frontends.views._view import VIEWS
from vfcheck._options.resolved import CheckOptions
from vfcheck._shared.findings import EnvReport, Finding, TaskId
from vfcheck.checks import REGISTRY


def test_every_view_names_registered_families_and_each_family_has_at_most_one_view() -> None:
    declared = [family for v in VIEWS for family in v.families]
    assert set(declared) <= set(REGISTRY.families)
    assert len(declared) == len(set(declared))


def test_episode_links_are_the_views_choice() -> None:
    linked = {f for f in REGISTRY.families if views.episode_linked(f)}
    assert {"golden", "lifecycle", "preview", "determinism", "robustness", "reward",
            "exploit", "judge"} <= linked
    assert "setup" not in linked and "load" not in linked


def test_the_golden_header_line_only_when_golden_runs(tmp_path) -> None:  # type: ignore[no-untyped-def]
    options = CheckOptions(golden_dir=str(tmp_path / "golden"))
    assert views.header_lines(options, {"golden", "episode"}) == [
        f"golden traces: {tmp_path / 'golden'}/ (compare)"]
    assert views.header_lines(options, {"setup", "gold"}) == []


def test_summary_lines_and_report_data_come_from_the_views() -> None:
    task = TaskId(0, "k")
    report = EnvReport(id="e", findings=[Finding(
        "golden", "golden", task, "passed", "matched",
        {"golden": {"action": "matched", "path": "golden/e/k.json"}})])
    assert views.summary_lines(report) == ["e golden traces: 1 matched in golden/e"]
    assert views.report_data(report) == {}
    sections = views.sections([report], CheckOptions())
    assert sections == [("golden traces", ["e golden traces: 1 matched in golden/e"])]


def test_a_refused_runtime_setting_is_one_summary_line_naming_the_tasks_and_the_line() -> None:
    refused = {"runtime_refusal": {"setting": "network_allow=[]", "site": "envs/x.py:23",
                                   "refusal": "task 0 requires a network policy"}}
    report = EnvReport(id="x", findings=[
        Finding("setup", "setup", TaskId(i, f"k{i}"), "passed", "setup valid", refused)
        for i in range(3)] + [Finding("setup", "setup", TaskId(3, "k3"), "passed", "valid")])
    assert views.summary_lines(report) == [
        "x runtime: tasks 0, 1, 2 ask for network_allow=[] (envs/x.py:23), which verifiers' "
        "subprocess runtime refuses; vfcheck played them under its own offline policy (no host "
        "but the mocked endpoints): the env runs only on a runtime with network policies"]
