"""`soak.memory`: an env that keeps a trace's record per episode in a class-level list fails
it, and only it, with a message naming the line that allocated what was kept and the bytes
per episode; the well-behaved fixtures (tool servers, several turns, a judge) and verifiers'
own sdist envs keep nothing from episode to episode."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support import CheckCache, PluginRun, check_report

from vfcheck.checks import BY_ID

from .test_checks import CONFORMANCE, units_with

BROKEN = "vfc-broken-memory-growth"
BREAKS = {BROKEN: {("soak.memory", None)}}
"""The fixture and the findings that must fail on it (with the conformance families and
`soak`): nothing else may."""
CLEAN = ["vfc-echo", "vfc-tool", "vfc-multiturn", "vfc-judge"]
SDIST_CLEAN = ["echo-v1", "echo-tool-v1", "counter-tool-v1"]


def soak_finding(env: dict[str, Any]) -> dict[str, Any]:
    return next(f for f in env["findings"] if f["check"] == "soak.memory")


@pytest.fixture(scope="module")
def broken_run(checked: CheckCache) -> PluginRun:
    return checked.plugin([BROKEN], f"{CONFORMANCE},soak")


@pytest.fixture(scope="module")
def clean_run(checked: CheckCache) -> PluginRun:
    return checked.plugin(CLEAN, "--vf-checks=soak,hygiene")


@pytest.mark.slow
def test_memory_kept_per_episode_fails_soak_only_naming_the_line_and_the_bytes(
        broken_run: PluginRun) -> None:
    env = broken_run.envs[BROKEN]
    assert broken_run.ret == 1
    assert units_with(env, {"failed", "error"}) == BREAKS[BROKEN], [
        f["message"] for f in env["findings"] if f["outcome"] in ("failed", "error")]
    finding = soak_finding(env)
    message = finding["message"]
    assert message.startswith(f"env {BROKEN!r}: soak.memory failed — task 0 (vfc-echo:hello "
                              "world) played 10 times over: env code kept "), message
    assert ("vfc_broken_memory_growth.py:30 `VfcBrokenMemoryGrowthTask.audit.append("
            "trace.model_dump(mode=\"json\"))` ") in message, message
    assert "above the threshold of 1.0 KiB per episode" in message
    assert BY_ID["soak.memory"].contract in message and "\n" not in message
    line = finding["details"]["lines"][0]
    assert line["at"] == "vfc_broken_memory_growth.py:30"
    assert line["per_episode"] > 4096, line  # a trace's JSON record, a few KiB
    assert finding["details"]["traced"] == 10 and finding["details"]["warmup"] == 2


@pytest.mark.slow
@pytest.mark.parametrize("env_id", CLEAN)
def test_well_behaved_fixtures_keep_nothing_per_episode(clean_run: PluginRun,
                                                        env_id: str) -> None:
    env = clean_run.envs[env_id]
    assert units_with(env, {"failed", "error"}) == set(), [
        f["message"] for f in env["findings"] if f["outcome"] in ("failed", "error")]
    finding = soak_finding(env)
    assert finding["outcome"] == "passed", finding["message"]
    assert " times over" in finding["message"] and ": env code kept " in finding["message"]


@pytest.mark.slow
def test_verifiers_own_envs_keep_nothing_per_episode(verifiers_fixtures: Path,
                                                    tmp_path: Path) -> None:
    done = check_report(*SDIST_CLEAN, "--path", str(verifiers_fixtures), "--checks", "soak",
                        cwd=tmp_path)
    for env_id in SDIST_CLEAN:
        finding = soak_finding(done.envs[env_id])
        assert finding["outcome"] == "passed", finding["message"]


@pytest.mark.slow
def test_the_threshold_and_the_episodes_are_options(checked: CheckCache,
                                                    fixtures_dir: Path) -> None:
    """A threshold above what the fixture keeps passes it; fewer episodes trace fewer."""
    done = checked.check(BROKEN, "--path", str(fixtures_dir), "--checks", "soak",
                         "--soak-growth", "1000000", "--soak-episodes", "8")
    finding = soak_finding(done.envs[BROKEN])
    assert finding["outcome"] == "passed", finding["message"]
    assert "within the threshold of 976.6 KiB per episode" in finding["message"]
    assert finding["details"]["warmup"] == 2 and finding["details"]["traced"] == 6
