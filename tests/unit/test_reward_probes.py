"""The reward probes' bookkeeping, without an episode."""

from __future__ import annotations

from typing import Any

import pytest


async def test_a_reply_that_made_no_judge_call_is_not_played_again_for_another_verdict(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`claim/positive` reuses `claim`'s episode when it made no judge call (the verdict
    cannot have mattered, and a tool env pays an interpreter per episode); a judged one is
    played again."""
    from types import SimpleNamespace

    from vfcheck.checks._probes import Probe, ProbeLab, ProbeResult

    played: list[str] = []

    async def fake_play(self: ProbeLab, task: Any, probe: Probe) -> ProbeResult:
        played.append(probe.name)
        return ProbeResult(probe.name, probe.reply, probe.judge, 0.0,
                           judge_calls=int(probe.reply == "judged"))

    monkeypatch.setattr(ProbeLab, "_play", fake_play)
    lab = ProbeLab(SimpleNamespace(options=SimpleNamespace(reward_max=1.0)), None)  # type: ignore[arg-type]
    task = SimpleNamespace(data=SimpleNamespace(idx=0), config=SimpleNamespace(judges=None))
    for reply in ("plain", "judged"):
        first = Probe(reply, "negative", lambda request: None, reply)
        again = Probe(f"{reply}/positive", "positive", first.agent, reply)
        await lab.play(task, first)
        result = await lab.play(task, again)
        assert (result.probe, result.judge) == (f"{reply}/positive", "positive")
    assert played == ["plain", "judged", "judged/positive"]
