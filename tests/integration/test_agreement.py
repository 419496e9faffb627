"""The two front ends agree finding by finding, and setup/gold/noop agree with vf-validate
(vfcheck calls verifiers' own check; here the real `vf-validate` CLI runs beside it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support import CheckCache, basic_check, check_report

pytest_plugins = ["pytester"]

BIN = Path(sys.executable).parent
ENV = "vfc-broken-gold"


def verdicts(report: dict[str, Any], checks: set[str] | None = None) -> set[tuple[Any, ...]]:
    (env,) = report["envs"]
    return {
        (f["check"], f["task"]["index"] if f["task"] else None, f["outcome"])
        for f in env["findings"] if checks is None or f["check"] in checks
    }


def findings_of(report: dict[str, Any]) -> str:
    """Every finding of a report, a line each: what an assertion shows when verdicts differ."""
    lines = [f"{f['check']} {f['outcome']}: {f['message']}"
             for env in report["envs"] for f in env["findings"]]
    return "\n".join([*lines, "stderr:", report.get("stderr", "")])


def vfcheck_check(fixtures_dir: Path, tmp_path: Path, env: str, *extra: str) -> dict[str, Any]:
    where = tmp_path / f"{env}-cli-{len(list(tmp_path.glob('*-cli-*')))}"  # one per run
    where.mkdir()
    done = check_report(env, "--path", str(fixtures_dir), *extra, cwd=where)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    report = done.report
    report["stderr"] = done.stderr[-2000:]
    return report


def checked_report(checked: CheckCache, env: str) -> dict[str, Any]:
    """`vfcheck check ENV --checks setup,gold,noop,episode`, run once per test session."""
    done = checked.check(*basic_check(env))
    assert done.returncode in (0, 1), done.stderr[-2000:]
    report = done.report
    report["stderr"] = done.stderr[-2000:]
    return report


@pytest.mark.slow
def test_cli_and_plugin_agree_finding_by_finding(
    pytester: pytest.Pytester, fixtures_dir: Path, checked: CheckCache
) -> None:
    cli = checked_report(checked, ENV)
    out = pytester.path / "plugin.json"
    result = pytester.runpytest_subprocess(
        "--vf-env", ENV, "--vf-path", str(fixtures_dir), "--vf-checks", "setup,gold,noop,episode",
        "--vf-json", str(out), "-p", "no:cacheprovider", timeout=600)
    assert result.ret == 1
    plugin = json.loads(out.read_text())
    assert verdicts(cli) == verdicts(plugin)
    assert ("gold", 1, "failed") in verdicts(cli)
    # and the items pytest reports are those findings
    result.assert_outcomes(passed=sum(1 for v in verdicts(plugin) if v[2] == "passed"),
                           failed=1, skipped=1)


def vf_validate(fixtures_dir: Path, out: Path, env: str, *extra: str) -> Path:
    done = subprocess.run(
        [str(BIN / "vf-validate"), env, "--runtime.type", "subprocess", "--rich", "false",
         "-o", str(out), *extra],
        capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL, cwd=out.parent,
        env={**os.environ, "PYTHONPATH": str(fixtures_dir),
             "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"},
    )
    assert done.returncode == 0, done.stderr[-2000:]  # vf-validate exits 0 whatever it found
    (summary,) = out.rglob("summary.json")
    return summary.parent


@pytest.mark.slow
@pytest.mark.parametrize("env", ["vfc-echo", "vfc-broken-gold", "vfc-broken-noop"])
def test_gold_and_noop_verdicts_match_vf_validate(
    fixtures_dir: Path, tmp_path: Path, env: str, checked: CheckCache
) -> None:
    run_dir = vf_validate(fixtures_dir, tmp_path / "validate", env)
    graded = vfcheck_check(fixtures_dir, tmp_path, env, "--from-validate", str(run_dir))
    ours = checked_report(checked, env)
    checks = {"gold", "noop"}
    assert verdicts(graded, checks) == verdicts(ours, checks), findings_of(ours)


@pytest.mark.slow
def test_setup_verdicts_match_vf_validate_only_setup(fixtures_dir: Path, tmp_path: Path) -> None:
    env = "vfc-broken-setup"
    run_dir = vf_validate(fixtures_dir, tmp_path / "validate", env, "--only-setup")
    graded = vfcheck_check(fixtures_dir, tmp_path, env, "--from-validate", str(run_dir))
    ours = vfcheck_check(fixtures_dir, tmp_path, env, "--checks", "setup")
    assert verdicts(graded, {"setup"}) == verdicts(ours, {"setup"})
    assert ("setup", 1, "failed") in verdicts(ours)


@pytest.mark.slow
def test_from_validate_rejects_a_broken_run_dir_in_one_line(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "summary.json").write_text("{}")
    (run / "results.jsonl").write_text('{"mode": "gold", "reason": "valid"}\n{"mode": "go')
    done = subprocess.run(
        [sys.executable, "-m", "vfcheck", "check", "--from-validate", str(run)],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert "results.jsonl:2: truncated or invalid JSON line" in line
