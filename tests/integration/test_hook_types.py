"""Hooks that return the wrong type are named with what they returned: the probe on the real
fixture tasks, and verifiers' own error texts read back."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from vfcheck._episodes.offline import prepare_process_env
from vfcheck._episodes.runner import load_env
from vfcheck._episodes.task_loading import load_tasks
from vfcheck.checks._hook_types import (
    SCORE_RULE,
    STOP_RULE,
    explain_error,
    probe,
    untouched_trace,
)


@pytest.fixture(scope="module")
def tasks(fixtures_dir: Path) -> list[Any]:
    prepare_process_env([str(fixtures_dir)])
    env, _ = load_env("vfc-broken-hook-types")
    return load_tasks(env, None)


def verifiers_float_error(value: object) -> str:
    """The text verifiers' scoring raises for `value` (`Trace.record_reward` -> float())."""
    import verifiers.v1 as vf

    trace = vf.Trace(task=vf.TraceTask(type="T", data=vf.TaskData(), key="k", hash="h"),
                     agent=vf.AgentInfo(config=vf.AgentConfig(), name="t", trainable=False))
    with pytest.raises((TypeError, ValueError)) as raised:
        trace.record_reward("echoed", value)  # type: ignore[arg-type]
    return f"task T scoring: {type(raised.value).__name__}: {raised.value}"


def test_probe_names_each_hook_and_what_it_returned(tasks: list[Any]) -> None:
    found = {t.data.idx: asyncio.run(probe(t, untouched_trace(t))) for t in tasks}
    assert found == {
        0: [],
        1: ["@vf.reward echoed returned 'no' (str), not a number"],
        2: ["@vf.stop single_turn returned None (NoneType), not a bool"],
        3: [],  # its validate is the fault: the gold check reads that from the row
        4: [],  # setup/finalize return values are discarded by verifiers
    }


def test_verifiers_errors_are_read_back_as_the_returned_value_and_the_rule() -> None:
    assert explain_error(verifiers_float_error("yes")) == (
        "a scoring hook returned 'yes' (str), not a number", SCORE_RULE)
    assert explain_error(verifiers_float_error(None)) == (
        "a scoring hook returned None (NoneType), not a number", SCORE_RULE)
    # verifiers 0.4.0 `session.py` `RolloutSession.refused`
    assert explain_error("TaskError: @stop must return bool, got str") == (
        "a @vf.stop hook returned a str, not a bool", STOP_RULE)
    assert explain_error("RuntimeError: fixture: setup cannot reach its database") is None


