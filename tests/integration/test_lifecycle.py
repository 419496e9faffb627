"""Lifecycle rules on real fixture episodes (on synthetic logs: tests/unit/test_lifecycle.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vfcheck._episodes.runner import run_episodes
from vfcheck._model import Reply, ScriptedModel, fixed
from vfcheck.checks.lifecycle import (
    describe_log,
    lifecycle_violations,
)

# -- real episodes of the fixture envs


REAL = {
    "echo": dict(env_id="vfc-echo"),
    "multiturn": dict(env_id="vfc-multiturn"),
    "duet": dict(env_id="vfc-duet"),
    "upstream-500": dict(
        env_id="vfc-echo", model=ScriptedModel(fixed(Reply.fault("status", status=500)))
    ),
    "hang-agent-timeout": dict(
        env_id="vfc-echo",
        num_tasks=1,
        model=ScriptedModel(fixed(Reply.fault("hang"))),
        env_args={"agent.timeout.rollout": 1.0},
    ),
}


@pytest.mark.parametrize(
    "case", [*REAL, pytest.param("tool", marks=pytest.mark.slow)]
)
async def test_real_episodes_have_no_lifecycle_violation(fixtures_dir: Path, case: str) -> None:
    kwargs = dict(REAL.get(case) or {"env_id": "vfc-tool", "num_tasks": 1})
    env_id = kwargs.pop("env_id")
    summary = await run_episodes(env_id, paths=[str(fixtures_dir)], **kwargs)  # type: ignore[arg-type]
    logs = [log for result in summary.results for log in result.logs]
    assert logs
    for log in logs:
        found = lifecycle_violations(log.events, log.trace)
        assert found == [], describe_log(log.events, {v.event for v in found if v.event})


async def test_a_cancelled_hanging_episode_leaves_a_preview_violation(
    fixtures_dir: Path,
) -> None:
    summary = await run_episodes(
        "vfc-echo", num_tasks=1, model=ScriptedModel(fixed(Reply.fault("hang"))),
        timeout=1.0, paths=[str(fixtures_dir)],
    )
    (log,) = summary.results[0].logs
    found = {v.rule for v in lifecycle_violations(log.events, log.trace)}
    assert "lifecycle.preview" in found
