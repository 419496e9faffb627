"""What a run's reader gets after the marks (`vfcheck._frontends.next_steps`): golden traces
looked for in the wrong place said loudly, skipped and expected findings explained, and the
closing lines saying what to do next. From findings alone: nothing runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from vfcheck._frontends.next_steps import closing_lines, explained
from vfcheck._frontends.views.golden import golden_not_found
from vfcheck._options.resolved import resolve
from vfcheck._shared.findings import EnvReport, Finding, TaskId


def missing_golden(folder: Path, env: str = "my-env") -> list[Finding]:
    return [Finding("golden", "golden", TaskId(i, f"k{i}"), "skipped",
                    f"env '{env}', task {i} (k{i}): no golden trace yet at x; record it with: y",
                    {"golden": {"action": "missing", "path": str(folder / env / f"k{i}.json")}})
            for i in range(3)]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """`tmp/proj`: an env package with its golden traces; `tmp` holds no pyproject.toml."""
    proj = tmp_path / "proj"
    (proj / "golden" / "my-env").mkdir(parents=True)
    (proj / "golden" / "my-env" / "k0.json").write_text("{}")
    (proj / "my_env.py").write_text("")
    (proj / "pyproject.toml").write_text('[project]\nname = "proj"\n')
    return proj


def test_from_the_wrong_folder_missing_golden_traces_are_said_loudly_with_the_path(
        project: Path) -> None:
    outside = project.parent
    options = resolve(outside, {"paths": ["proj"]}).check
    report = EnvReport(id="my-env", findings=missing_golden(outside / "golden"))
    warning = golden_not_found(report, options)
    assert warning is not None and warning.startswith("vfcheck: WARNING: none of my-env's")
    assert f"{outside / 'golden' / 'my-env'}" in warning
    assert f"its project {project} has them in {project / 'golden' / 'my-env'}" in warning
    assert closing_lines([report], options, resolve(outside).run)[0].startswith(
        "next: run vfcheck where my-env's golden traces are")
    # no project at all around the env: still loud, with the absolute path
    (project / "golden" / "my-env" / "k0.json").unlink()
    warning = golden_not_found(report, options)
    assert warning is not None and f"{outside} holds no pyproject.toml" in warning


def test_a_healthy_first_run_in_the_project_is_not_warned(project: Path) -> None:
    (project / "golden" / "my-env" / "k0.json").unlink()
    options = resolve(project).check
    report = EnvReport(id="my-env", findings=missing_golden(project / "golden"))
    assert golden_not_found(report, options) is None
    (line,) = [x for x in closing_lines([report], options, resolve(project).run)
               if x.startswith("next:")]
    assert line == ("next: record 3 missing golden trace(s) of my-env (when intended): "
                    "vfcheck check my-env --checks golden --golden-update")


def test_skipped_and_expected_are_explained_with_the_allow_entry_and_where_it_is_set(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    (project / "pyproject.toml").write_text(
        '[project]\nname = "proj"\n[tool.vfcheck.allow]\n"exploit.echo" = "echo on purpose"\n')
    found = resolve(project, {"allow": ["judge.*=no judge here"], "html": "r.html"})
    allowed = {"pattern": "exploit.echo", "reason": "echo on purpose"}
    findings = [
        *missing_golden(project / "golden"),
        *(Finding("exploit.echo", "exploit", TaskId(i, "k"), "expected",
                  "allowed (echo on purpose): env 'my-env', task 0 (k): exploit.echo failed",
                  {"allowed": allowed}) for i in (0, 1)),
        Finding("judge.wiring", "judge", TaskId(2, "k"), "skipped",
                "env 'my-env', task 2 (k): the env made no judge call while scoring"),
    ]
    assert explained(EnvReport(id="my-env", findings=findings), found.check.allow_from) == [
        "my-env skipped (4):",
        "  golden[0-2]: no golden trace yet in golden/my-env",
        "  judge.wiring[2]: the env made no judge call while scoring",
        "my-env expected (2):",
        "  exploit.echo[0,1]: allowed by 'exploit.echo' (echo on purpose), set in "
        "pyproject.toml: [tool.vfcheck] allow",
    ]
    closing = closing_lines([EnvReport(id="my-env", findings=findings)], found.check,
                            found.run)
    assert closing[1:] == [
        "allowed: exploit.echo (set in pyproject.toml: [tool.vfcheck] allow); judge.* (set "
        "in --allow)",
        f"reports: HTML report {project / 'r.html'}"]


def test_the_first_next_step_follows_from_what_failed(project: Path) -> None:
    """Failures come before recording golden traces (which becomes `then:`); errors alone
    are named as errors, not failures; a cut-off run is run again first."""
    options, run = resolve(project).check, resolve(project).run
    failed = Finding("gold", "gold", TaskId(1, "k1"), "failed", "env 'my-env', task 1: bad")
    errored = Finding("setup", "setup", TaskId(1, "k1"), "error", "env 'my-env', task 1: ?")
    lines = closing_lines([EnvReport(id="my-env", findings=[
        *missing_golden(project / "golden"), failed])], options, run)
    assert lines[0] == "next: fix the failures above, then run the rerun line again"
    assert lines[1].startswith("then: record 3 missing golden trace(s) of my-env")
    assert closing_lines([EnvReport(id="my-env", findings=[errored])], options, run)[0] == (
        "next: 1 finding(s) could not be judged (the errors above): fix what they name, then "
        "run the rerun line again")
    cut = EnvReport(id="my-env", findings=[failed], not_run=["gold[2]", "noop[*]"])
    assert closing_lines([cut], options, run)[0] == (
        "next: the run was cut short before 2 check(s) ran: its verdict is partial; run the "
        "rerun line again (and fix the 1 failure(s) above)")
