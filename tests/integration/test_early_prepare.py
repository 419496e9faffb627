"""Work a check begins early (`prepare`: `determinism.load`'s other interpreter) takes the
core the worker's import of verifiers leaves idle: it starts before that import on a chat env,
and after it where the hint started a tool env's warm interpreter on that core. Read from the
JSON report's timeline (the order of the worker's events, not their durations); the verdict
is the same either way."""

from __future__ import annotations

import pytest
from support import FIXTURES, CheckCache, by_unit


@pytest.mark.parametrize(("env_id", "first", "then"), [
    ("vfc-echo", "prepared", "imported"),  # nothing else on the idle core
    ("vfc-tool", "imported", "prepared"),  # its source names a toolset: the warm one's core
])
def test_the_other_load_starts_on_the_core_the_import_leaves_idle(
        checked: CheckCache, env_id: str, first: str, then: str) -> None:
    done = checked.check(env_id, "--path", str(FIXTURES), "--checks", "determinism")
    env = done.envs[env_id]
    events = env["timeline"]["events"]
    assert events["hello"] <= events[first] <= events[then] <= events["ready"], events
    finding = by_unit(env)[("determinism.load", None)]
    assert finding["outcome"] == "passed", finding["message"]
    assert "identical across two fresh interpreters" in finding["message"]
