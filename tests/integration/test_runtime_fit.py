"""A task network policy that verifiers' subprocess runtime refuses (vfc-network-none:
`network_allow=[]`) is the env's incompatibility with that runtime, named with the env's
line and verifiers' words, never "vfcheck could not run setup" nor "Task.setup failed";
vfcheck plays the task under its own, stricter, offline policy, so every other check runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import FIXTURES, CheckCache, by_unit

CHECKS = "load,setup,gold,noop,episode,lifecycle,preview,robustness,reward,served,hygiene"
"""What a task's setup gates, and the served path (the policy crosses the wire too)."""


@pytest.mark.slow
def test_a_refused_network_policy_names_the_envs_line_and_blocks_nothing(
        checked: CheckCache) -> None:
    run = checked.check("vfc-network-none", "--path", str(FIXTURES), "--checks", CHECKS)
    env = run.envs["vfc-network-none"]
    bad = [f for f in env["findings"] if f["outcome"] in {"failed", "error"}]
    assert bad == [], bad
    for finding in env["findings"]:
        assert "Task.setup failed" not in finding["message"], finding
        assert "vfcheck could not run" not in finding["message"], finding
    units = by_unit(env)
    for index in range(3):
        setup = units[("setup", index)]
        assert setup["outcome"] == "passed"
        line = line_of("network_allow=[]),")
        assert "the task asks for network_allow=[] (" in setup["message"]
        assert f"vfc_network_none.py:{line}), which verifiers' subprocess runtime refuses" \
            in setup["message"]
        assert (f"task {index} requires a network policy, but the subprocess runtime does "
                "not support framework-aware policies") in setup["message"]
        for played in ("gold", "noop", "episode", "served.episode"):
            assert units[(played, index)]["outcome"] == "passed", units[(played, index)]
    assert run.returncode == 0
    assert "vfc-network-none runtime: tasks 0, 1, 2 ask for network_allow=[] (" in run.stdout


def line_of(text: str) -> int:
    """The line of vfc_network_none.py holding `text`."""
    lines = (FIXTURES / "vfc_network_none.py").read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


@pytest.mark.slow
def test_a_task_that_needs_a_container_is_skipped_naming_its_setting_and_line(
        checked: CheckCache, verifiers_fixtures: Path) -> None:
    """verifiers' agent-user-harness-v1 sets `agent_user`: skipped, saying which setting
    (and where), never a verdict."""
    run = checked.check("agent-user-harness-v1", "--path", str(verifiers_fixtures),
                        "--checks", "setup,episode")
    units = by_unit(run.envs["agent-user-harness-v1"])
    for unit in (("setup", 0), ("episode", 0)):
        assert units[unit]["outcome"] == "skipped"
        assert ("needs a container runtime: the task asks for agent_user='vf-agent' ("
                in units[unit]["message"])
        assert "agent_user_harness_v1.py:" in units[unit]["message"]
