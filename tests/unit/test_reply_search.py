"""The reply search `fuzz` and `exploit.search` share, on a lab that plays nothing (each
"play" scores the reply by a rule): a deadline a play hits in the search's thread is noted
on the check's attempt, so a failure it may have decided is run again alone like every
check's; the same seed finds the same smallest reply; the plays stay within the budget and
within the check's share of its deadline."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import hypothesis.strategies as st

from vfcheck._host.attempts import CURRENT_ATTEMPT, Attempt, deadline_hit, needs_confirming
from vfcheck._shared.findings import Finding
from vfcheck.checks._fuzz_replies import DrawnReply
from vfcheck.checks._probe_results import Probe, ProbeResult
from vfcheck.checks._reply_search import SHRINK_FACTOR, ReplySearch, Searched

LATE = "episode exceeded the runner's 2s deadline"
REPLIES = st.text(alphabet="abc", max_size=8).map(DrawnReply)


class RuleLab:
    """Scores each reply by `reward(text)`; notes a deadline on each play if `late`."""

    def __init__(self, reward: Callable[[str], float], late: bool = False) -> None:
        self.reward, self.late, self.plays = reward, late, 0

    async def play(self, task: Any, probe: Probe) -> ProbeResult:
        self.plays += 1
        if self.late:
            deadline_hit(LATE)
        return ProbeResult(probe.name, probe.reply, probe.judge, self.reward(probe.reply))


def search(tmp_path: Path, lab: RuleLab, *, seed: int = 0, budget: int = 10,
           deadline: float = 600.0) -> tuple[Searched, Attempt]:
    ctx = SimpleNamespace(seed=seed, options=SimpleNamespace(project_dir=str(tmp_path)))
    task = SimpleNamespace(data=SimpleNamespace(idx=1))

    def long_enough(_: DrawnReply, result: ProbeResult) -> str | None:
        return f"earned {result.reward}" if result.reward else None

    async def run() -> tuple[Searched, Attempt]:
        attempt = Attempt()
        CURRENT_ATTEMPT.set(attempt)
        found = await ReplySearch(ctx, lab, task, "negative", deadline, "search").run(  # type: ignore[arg-type]
            REPLIES, budget, "salt", long_enough, lambda r: r.reward)
        return found, attempt

    return asyncio.run(run())


def test_a_deadline_a_play_hits_in_the_search_thread_is_the_checks(tmp_path: Path) -> None:
    found, attempt = search(tmp_path, RuleLab(lambda text: float(len(text) >= 3), late=True))
    assert found.found is not None
    assert attempt.deadlines == [LATE]
    failed = Finding("fuzz", "fuzz", None, "failed", found.what)
    assert needs_confirming(failed, attempt)  # run again alone before it is reported


def test_the_same_seed_finds_the_same_smallest_reply(tmp_path: Path) -> None:
    runs = [search(tmp_path, RuleLab(lambda text: float(len(text) >= 3)), seed=7)[0]
            for _ in range(2)]
    assert runs[0].found == runs[1].found == DrawnReply("aaa")
    assert runs[0].plays == runs[1].plays


def test_plays_stay_within_the_budget(tmp_path: Path) -> None:
    lab = RuleLab(lambda text: 0.0)
    found, _ = search(tmp_path, lab, budget=4)
    assert found.found is None and found.plays == lab.plays <= 4
    lab = RuleLab(lambda text: float("b" in text))
    found, _ = search(tmp_path, lab, budget=4)
    assert found.found == DrawnReply("b") and lab.plays <= 4 * SHRINK_FACTOR


def test_no_play_once_the_checks_share_of_its_deadline_is_spent(tmp_path: Path) -> None:
    lab = RuleLab(lambda text: 1.0)
    found, _ = search(tmp_path, lab, deadline=0.0)
    assert found.out_of_time and found.found is None and lab.plays == 0


def test_hypothesis_writes_under_the_projects_vfcheck_folder(tmp_path: Path) -> None:
    search(tmp_path, RuleLab(lambda text: 0.0), budget=2)
    assert not (tmp_path / ".hypothesis").exists()
