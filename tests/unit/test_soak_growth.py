"""`soak.memory`'s arithmetic and words: a line of env code that holds more after every
stretch of episodes grows, at its slowest stretch's rate; a snapshot taken mid-episode of
another check does not make a line grow; the message names the line, its code and the
bytes per episode. And `RetainedMemory` charges what a line allocated and still holds to
that line (this test module counts as env code: it is outside vfcheck, verifiers, the
standard library and site-packages)."""

from __future__ import annotations

import gc
import tracemalloc

import pytest

from vfcheck._host.retained import RetainedMemory, Site
from vfcheck.checks._memory_growth import (
    Growth,
    growth_observed,
    shown_bytes,
    steady_growth,
)
from vfcheck.checks.soak import soak_plan

AUDIT = Site("my_env.py:30", "AUDIT.append(trace.model_dump())")
PROMPT = Site("my_env.py:12", "return f\"{self.data.prompt}\"")


def test_a_line_that_holds_more_after_every_stretch_grows_at_its_slowest_rate() -> None:
    snapshots = [{AUDIT: 0}, {AUDIT: 8 * 4096}, {AUDIT: 8 * 4096 + 8 * 4000}]
    assert steady_growth(snapshots, [0, 8, 16]) == [Growth(AUDIT, 4000.0, 8 * 4096 + 8 * 4000)]


def test_other_checks_episodes_count_as_episodes() -> None:
    """16 episodes of the soak and 16 of other checks: a line that kept 64 KiB kept 2 KiB
    an episode."""
    snapshots = [{AUDIT: 0}, {AUDIT: 32768}, {AUDIT: 65536}]
    assert steady_growth(snapshots, [0, 16, 32])[0].per_episode == 2048


@pytest.mark.parametrize("held", [
    [0, 3000, 3000],  # an episode in flight at the middle snapshot, none at the last
    [0, 0, 3000],  # one in flight at the last snapshot only
    [500, 500, 500],  # a cache filled once
    [4000, 2000, 0],  # freed
])
def test_a_line_that_does_not_grow_in_every_stretch_is_not_growth(held: list[int]) -> None:
    snapshots = [{PROMPT: size} for size in held]
    assert steady_growth(snapshots, [0, 8, 16]) == []


def test_lines_come_largest_first_and_snapshots_need_their_counts() -> None:
    snapshots = [{}, {AUDIT: 800, PROMPT: 80}, {AUDIT: 1600, PROMPT: 160}]
    assert [g.site for g in steady_growth(snapshots, [0, 8, 16])] == [AUDIT, PROMPT]
    with pytest.raises(ValueError, match="one episode count per snapshot"):
        steady_growth(snapshots, [0, 8])


def test_growth_above_the_threshold_fails_naming_the_line_and_the_bytes() -> None:
    growth = [Growth(AUDIT, 8727.0, 139632), Growth(PROMPT, 64.0, 1024)]
    over, said = growth_observed(growth, 1024, warmup=4, warmed=3, own=16, others=5)
    assert over
    assert said.startswith("env code kept 8.6 KiB more per episode after 4 warm-up episodes "
                           "(3 of them other checks'), over 16 episodes of this task (and 5 of "
                           "other checks that ran meanwhile) (137.4 KiB in all): ")
    assert "my_env.py:30 `AUDIT.append(trace.model_dump())` 8.5 KiB per episode; " in said
    assert "above the threshold of 1.0 KiB per episode" in said
    assert "out-of-memory" in said


def test_growth_within_the_threshold_or_none_passes_saying_so() -> None:
    over, said = growth_observed([Growth(PROMPT, 64.0, 1024)], 1024, warmup=4, warmed=0,
                                 own=16, others=0)
    assert not over
    assert said.endswith("my_env.py:12 `return f\"{self.data.prompt}\"` 64 B per episode; "
                         "within the threshold of 1.0 KiB per episode")
    over, said = growth_observed([], 1024, warmup=1, warmed=0, own=1, others=0)
    assert not over
    assert said == ("env code kept no more memory from episode to episode (after 1 warm-up "
                    "episode, over 1 episode of this task)")


def test_the_warm_up_says_whose_episodes_it_was() -> None:
    from vfcheck.checks._memory_growth import warmup_text

    assert [warmup_text(2, w) for w in (0, 1, 2)] == [
        "2 warm-up episodes", "2 warm-up episodes (1 of them other checks')",
        "2 warm-up episodes (all of them other checks')"]


def test_bytes_are_shown_in_the_unit_that_reads() -> None:
    assert [shown_bytes(n) for n in (0, 512, 1024, 4300, 3 << 20)] == [
        "0 B", "512 B", "1.0 KiB", "4.2 KiB", "3.0 MiB"]


@pytest.mark.parametrize(("episodes", "plan"), [(12, (2, 5)), (16, (4, 6)), (20, (4, 8)),
                                                (5, (1, 2)), (6, (2, 2)), (21, (5, 8))])
def test_the_soak_warms_up_a_fifth_then_traces_two_equal_stretches(
        episodes: int, plan: tuple[int, int]) -> None:
    assert soak_plan(episodes) == plan
    assert plan[0] + 2 * plan[1] == episodes


HELD: list[bytearray] = []


def keep(count: int) -> None:
    HELD.extend(bytearray(10_000) for _ in range(count))


def test_retained_memory_charges_what_a_line_still_holds_to_that_line() -> None:
    memory = RetainedMemory()
    memory.start()
    try:
        before = memory.kept()
        keep(5)
        dropped = [bytearray(10_000) for _ in range(5)]
        cycle: list[object] = [bytearray(10_000)]
        cycle.append(cycle)
        del dropped, cycle
        after = memory.kept()
    finally:
        memory.stop()
        HELD.clear()
    grown = {site: after.get(site, 0) - before.get(site, 0) for site in after}
    kept_here = [site for site in grown if site.code.startswith("HELD.extend(")]
    assert [site.at.split(":")[0] for site in kept_here] == ["unit/test_soak_growth.py"], grown
    assert 50_000 <= grown[kept_here[0]] < 52_000, grown
    assert sum(grown.values()) < 52_000, grown  # the dropped list and the cycle are gone
    assert gc.get_freeze_count() == 0 and not tracemalloc.is_tracing()
