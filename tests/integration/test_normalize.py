"""Trace normalisation of real replays (the rules, the view and the diff on records made
here: tests/unit/test_normalize.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from vfcheck._episodes.runner import EpisodeResult, run_episodes
from vfcheck._traces.normalize import normalize_trace, trace_diff

# -- real replays against the deterministic mock


def normalized(result: EpisodeResult) -> list[dict[str, Any]]:
    by_id = {log.trace.id: log for log in result.logs}
    return [
        normalize_trace(t.to_record(), [e.as_dict() for e in by_id[t.id].events])
        for t in result.traces
    ]


@pytest.mark.parametrize(
    "env_id", ["vfc-echo", "vfc-duet", pytest.param("vfc-tool", marks=pytest.mark.slow)]
)
async def test_two_plays_of_a_task_normalise_identically(fixtures_dir: Path, env_id: str) -> None:
    first = (await run_episodes(env_id, num_tasks=1, paths=[str(fixtures_dir)])).results[0]
    second = (await run_episodes(env_id, num_tasks=1, paths=[str(fixtures_dir)])).results[0]
    assert {t.id for t in first.traces}.isdisjoint(t.id for t in second.traces)
    a, b = normalized(first), normalized(second)
    assert [line for x, y in zip(a, b, strict=True) for line in trace_diff(x, y)] == []
    assert a == b


async def test_two_tasks_differ_in_prompt(fixtures_dir: Path) -> None:
    summary = await run_episodes("vfc-echo", num_tasks=2, paths=[str(fixtures_dir)])
    (a,), (b,) = (normalized(r) for r in summary.results)
    paths = [line.split(":")[0] for line in trace_diff(a, b)]
    assert "task.data.prompt" in paths and "messages[1].content" in paths
