"""Every crash in env code is located: the hook, file:line and the line of code, as a stall is.

vfc-broken-reward-crash's reward raises `KeyError: 'ping'` on task 1, whatever it scores;
verifiers' own words (`TaskError: task T scoring: KeyError: 'ping'`) name neither. Both
front ends must name `reward 'echoed'`, the file and line, and the code, on every check of
task 1 that scores (vf-validate's rows via a second play under a tracer, episodes via the
trace's traceback); tasks 0 and 2 pass. A setup that raises names `Task.setup` likewise.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support import FIXTURES, by_unit, check_report, run_plugin

CHECKS = "setup,gold,noop,episode,robustness"
FAILED = {("gold", 1), ("noop", 1), ("episode", 1), ("robustness", 1)}


def site(module: str, needle: str, hook: str) -> str:
    """`in <hook> at <module>.py:<line>: `<code>`` for the line of `module` holding `needle`."""
    lines = (FIXTURES / f"{module}.py").read_text().splitlines()
    (line,) = [n for n, text in enumerate(lines, 1) if text.strip().startswith(needle)]
    return f"in {hook} at {module}.py:{line}: `{lines[line - 1].strip()}`"


CRASH = site("vfc_broken_reward_crash", "credit = CREDIT[", "reward 'echoed'")


def assert_located(findings: dict[tuple[str, int | None], dict[str, Any]]) -> None:
    failed = {unit for unit, f in findings.items() if f["outcome"] in {"failed", "error"}}
    assert failed == FAILED, {u: findings[u]["message"] for u in failed}
    for unit in FAILED:
        message = findings[unit]["message"]
        assert f"KeyError: 'ping' ({CRASH})" in message, message
        assert "\n" not in message


@pytest.mark.slow
def test_vfcheck_check_locates_a_reward_crash(tmp_path: Path) -> None:
    done = check_report("vfc-broken-reward-crash", "--path", str(FIXTURES), "--checks", CHECKS,
                        cwd=tmp_path, timeout=900)
    assert done.returncode == 1, done.stdout[-3000:]
    (env,) = done.report["envs"]
    assert_located(by_unit(env))
    assert "gold[1] FAILED" in done.stdout and CRASH in done.stdout


@pytest.mark.slow
def test_pytest_vf_env_locates_a_reward_crash_and_a_setup_crash(tmp_path: Path) -> None:
    run = run_plugin(tmp_path, FIXTURES, ["vfc-broken-reward-crash", "vfc-broken-setup"],
                     f"--vf-checks={CHECKS}")
    assert run.ret == 1
    assert_located(by_unit(run.envs["vfc-broken-reward-crash"]))
    assert CRASH in run.stdout
    setup = by_unit(run.envs["vfc-broken-setup"])[("setup", 1)]["message"]
    where = site("vfc_broken_setup", "raise RuntimeError(", "VfcBrokenSetupTask.setup")
    assert f"RuntimeError: fixture: setup cannot reach its database ({where})" in setup, setup
