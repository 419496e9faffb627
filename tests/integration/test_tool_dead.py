"""A tool server that never serves (vfc-broken-tool-dead: its toolset's module has no
`__main__`) is found when it exits, warm or cold: `episode` fails on each task naming the
toolset, the module, the exit code and the likely cause; the task's other episode checks
skip as blocked, pointing to it; no deadline is hit, so nothing is run again alone (the
check takes seconds after the load, not the runner's deadline per check). Gold, noop and
setup, which start no server, pass."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import CheckCache

from vfcheck.checks.served import POOL_OFF

pytestmark = pytest.mark.slow

ENV = "vfc-broken-tool-dead"
NO_SERVER = {"load", "setup", "gold", "noop", "served.data", "determinism.load",
             "golden.unused", "hygiene.processes", "hygiene.network"}
"""The checks that start no tool server of the env: they keep their own verdicts."""


@pytest.mark.parametrize("starts", ["warm", "cold"])
def test_a_tool_server_that_never_serves_is_named_and_blocks_its_task(
    fixtures_dir: Path, checked: CheckCache, starts: str
) -> None:
    extra = ["--cold-starts"] if starts == "cold" else []
    run = checked.check(ENV, "--path", str(fixtures_dir), *extra)
    env = run.envs[ENV]
    by_unit = {(f["check"], (f["task"] or {}).get("index")): f for f in env["findings"]}
    failed = {unit for unit, f in by_unit.items() if f["outcome"] in ("failed", "error")}
    assert failed == {("episode", 0), ("episode", 1)}, run.stdout[-3000:]
    for index in (0, 1):
        message = by_unit[("episode", index)]["message"]
        assert ("the `calc` toolset's server `python -m vfc_broken_tool_dead` exited with "
                "code 0 before it reported its port, writing nothing; likely cause: the module "
                "has no `if __name__ == \"__main__\":` that serves") in message, message
        assert "deadline" not in message
    for (check, index), finding in by_unit.items():
        assert "first_attempt" not in finding["details"], (check, index)  # never run again
        if check in NO_SERVER or check == "episode":
            continue
        if check == "served.pool":  # off by default: its skip says so, before any blocking
            assert finding["message"].endswith(POOL_OFF), finding["message"]
            continue
        if finding["outcome"] == "skipped" and check.split(".")[0] in ("lifecycle", "preview",
                                                                       "robustness", "golden",
                                                                       "served", "determinism"):
            assert finding["message"].endswith(
                "blocked — the `calc` toolset's server `python -m vfc_broken_tool_dead` exited "
                f"with code 0 without serving; see episode[{index}]"), finding["message"]
    assert all(by_unit[(c, i)]["outcome"] == "passed" for c in ("setup", "gold", "noop")
               for i in (0, 1))
    assert run.returncode == 1


def test_a_tool_server_that_runs_idle_without_serving_is_named_and_stopped(
    fixtures_dir: Path, checked: CheckCache
) -> None:
    """vfc-broken-tool-silent's server waits for a backend that never comes: alive, idle,
    no port. Each episode ends once it has been idle `SILENT_SECONDS`, naming it; the warm
    start cancelled while it waited kills the server (verifiers never got the process to
    stop), so hygiene.processes passes."""
    env_id = "vfc-broken-tool-silent"
    run = checked.check(env_id, "--path", str(fixtures_dir))
    env = run.envs[env_id]
    by_unit = {(f["check"], (f["task"] or {}).get("index")): f for f in env["findings"]}
    failed = {unit for unit, f in by_unit.items() if f["outcome"] in ("failed", "error")}
    assert failed == {("episode", 0), ("episode", 1)}, run.stdout[-3000:]
    for index in (0, 1):
        message = by_unit[("episode", index)]["message"]
        assert ("the `calc` toolset's server `python -m vfc_broken_tool_silent` ran 15 s "
                "without reporting its port, idle (no CPU, no output) all that time, writing "
                "nothing; likely cause: it serves over another transport") in message, message
        assert "deadline" not in message
        lifecycle = by_unit[("lifecycle", index)]
        assert lifecycle["outcome"] == "skipped"
        assert lifecycle["message"].endswith(
            "blocked — the `calc` toolset's server `python -m vfc_broken_tool_silent` ran 15 s "
            f"idle without serving; see episode[{index}]"), lifecycle["message"]
    assert by_unit[("hygiene.processes", None)]["outcome"] == "passed"
    assert all(by_unit[(c, i)]["outcome"] == "passed" for c in ("setup", "gold", "noop")
               for i in (0, 1))
