"""`pytest -n 2` on several envs: spread (`--vf-spread=workers`, or `auto` with a worker on
another machine), each env is checked on the one xdist worker that runs its items, the
workers share the envs, and the JSON report names the worker of each env; with every worker
on this machine (`auto`) or under a `--dist` that splits an env's items (`load`) the
controller checks every env, each once. Held to the `setup` family, the cheapest, so that
the run is mostly the envs' loads."""

from __future__ import annotations

import json
import re
from collections import defaultdict

import pytest
from support import FIXTURES

pytest_plugins = ["pytester"]


ENVS = ["vfc-echo", "vfc-many", "vfc-multiturn", "vfc-duet"]
TASKS = {"vfc-echo": 3, "vfc-many": 20, "vfc-multiturn": 2, "vfc-duet": 3}


def run(pytester: pytest.Pytester, envs: list[str], *extra: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        *[w for e in envs for w in ("--vf-env", e)], f"--vf-path={FIXTURES}",
        "--vf-checks", "setup", "--vf-json", "r.json", "-p", "xdist", "-n", "2", "-v",
        "-p", "no:cacheprovider", *extra, timeout=900)


def workers_by_env(result: pytest.RunResult) -> dict[str, set[str]]:
    """Which xdist workers ran each env's items (`[gw1] ... PASSED env::check`)."""
    ran: dict[str, set[str]] = defaultdict(set)
    for line in result.stdout.lines:
        if found := re.match(r"\[(gw\d+)\].* (?:PASSED|FAILED|SKIPPED|ERROR) ([\w-]+)::", line):
            ran[found[2]].add(found[1])
    return dict(ran)


@pytest.mark.slow
def test_each_env_is_checked_on_the_worker_that_runs_its_items(
    pytester: pytest.Pytester,
) -> None:
    result = run(pytester, ENVS, "--vf-spread=workers")  # these workers are on this machine
    result.assert_outcomes(passed=sum(1 + n for n in TASKS.values()))  # load + setup[i]
    result.stdout.fnmatch_lines(["*vfcheck: envs spread over the xdist workers "
                                 "(--dist loadscope)*"])
    ran = workers_by_env(result)
    assert sorted(ran) == sorted(ENVS)
    assert all(len(workers) == 1 for workers in ran.values()), ran
    assert set().union(*ran.values()) == {"gw0", "gw1"}, ran  # both workers had envs
    report = json.loads((pytester.path / "r.json").read_text())
    envs = {env["id"]: env for env in report["envs"]}
    assert [env["id"] for env in report["envs"]] == ENVS  # the order they were given in
    for env_id, env in envs.items():
        assert {env["worker"]} == ran[env_id]
        assert env["worker_starts"] == 1  # checked once, by that worker alone
        assert len(env["findings"]) == 1 + TASKS[env_id]
        assert {f["outcome"] for f in env["findings"]} == {"passed"}


@pytest.mark.slow
def test_workers_on_this_machine_leave_the_checks_to_the_controller(
    pytester: pytest.Pytester,
) -> None:
    """Spreading would load each env twice on cores the controller's checks already fill."""
    result = run(pytester, ["vfc-echo", "vfc-duet"])
    result.assert_outcomes(passed=8)
    result.stdout.fnmatch_lines(["*vfcheck: the xdist workers run on this machine, so this "
                                 "process checks every env, each loaded once*"])
    report = json.loads((pytester.path / "r.json").read_text())
    assert [(env["id"], env["worker"], env["worker_starts"]) for env in report["envs"]] == [
        ("vfc-echo", "main", 1), ("vfc-duet", "main", 1)]
    assert {f["outcome"] for env in report["envs"] for f in env["findings"]} == {"passed"}


@pytest.mark.slow
def test_a_dist_that_splits_an_envs_items_leaves_the_checks_to_the_controller(
    pytester: pytest.Pytester,
) -> None:
    result = run(pytester, ["vfc-echo", "vfc-duet"], "--dist", "load")
    result.assert_outcomes(passed=8)
    result.stdout.fnmatch_lines(["*--dist load puts an env's items on several workers, so "
                                 "this process checks every env*"])
    report = json.loads((pytester.path / "r.json").read_text())
    assert [(env["id"], env["worker"]) for env in report["envs"]] == [
        ("vfc-echo", "main"), ("vfc-duet", "main")]
