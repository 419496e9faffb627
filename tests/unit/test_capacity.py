"""The run's share of the machine: env workers and episodes in flight sized to the cores and
memory that are free, the user's numbers winning, and the header saying which."""

from __future__ import annotations

import pytest

from vfcheck._isolation.capacity import (
    CHAT_EPISODES,
    ENV_MEMORY,
    INTERPRETER_MEMORY,
    MIN_CHAT_EPISODES,
    cores_within,
    size,
    usable_cores,
)

GIB = 2**30


def test_a_quiet_machine_gets_a_worker_per_core_and_full_episode_gates() -> None:
    quiet = size(2, 0.1, 20 * GIB, envs=4)
    assert (quiet.envs_at_once, quiet.chat_episodes, quiet.interpreter_episodes) == (2, 15, 1)
    alone = size(2, 0.0, 20 * GIB, envs=1)  # one env has both cores
    assert (alone.envs_at_once, alone.chat_episodes, alone.interpreter_episodes) == (
        1, CHAT_EPISODES, 2)
    big = size(16, 0.5, 64 * GIB, envs=4)
    assert (big.envs_at_once, big.chat_episodes, big.interpreter_episodes) == (4, 16, 4)


def test_two_busy_cores_do_not_get_16_episodes_in_each_of_4_envs() -> None:
    busy = size(2, 2.0, 20 * GIB, envs=4)  # two workers still: their waits overlap
    assert (busy.envs_at_once, busy.chat_episodes, busy.interpreter_episodes) == (
        2, MIN_CHAT_EPISODES, 1)
    half = size(2, 1.0, 20 * GIB, envs=4)
    assert (half.envs_at_once, half.chat_episodes, half.interpreter_episodes) == (2, 8, 1)
    assert size(1, 1.0, 20 * GIB, envs=4).envs_at_once == 1  # no more workers than cores
    assert size(8, 8.0, 20 * GIB, envs=1).envs_at_once == 1  # nor than envs


def test_free_memory_caps_the_workers_and_the_interpreters() -> None:
    tight = size(8, 0.0, 2 * ENV_MEMORY + 1, envs=8)
    assert tight.envs_at_once == 2
    assert size(8, 0.0, ENV_MEMORY, envs=8).envs_at_once == 1
    per_env = 2 * INTERPRETER_MEMORY
    assert size(8, 0.0, per_env, envs=1).interpreter_episodes == 2


def test_what_the_user_gives_wins_and_the_header_says_so() -> None:
    given = size(2, 2.0, 20 * GIB, envs=4, envs_at_once=3, episodes_at_once=8)
    assert (given.envs_at_once, given.chat_episodes, given.interpreter_episodes) == (3, 8, 8)
    assert given.line() == (
        "concurrency: 3 env(s) at once, per env 8 chat or 8 tool/harness episode(s) in flight "
        "(2 cores, 2.0 busy, 20.0 GiB free; --envs-at-once and --episodes-at-once given)")
    assert size(2, 0.5, 20 * GIB, envs=2).line().endswith("0.5 busy, 20.0 GiB free)")


@pytest.mark.parametrize(("affinity", "cpu_max", "cores"), [
    (4, None, 4.0),                    # no cgroup file: the affinity
    (4, "max 100000\n", 4.0),          # no quota
    (4, "150000 100000\n", 1.5),       # a container's 1.5 CPUs
    (2, "800000 100000", 2.0),         # a quota above the affinity: the affinity
    (4, "20000 100000", 1.0),          # a fifth of a core: still one
    (0, None, 1.0),                    # never below one
    (4, "garbage", 4.0),               # unreadable: the affinity
])
def test_the_usable_cores_are_the_affinity_within_the_quota(
        affinity: int, cpu_max: str | None, cores: float) -> None:
    assert cores_within(affinity, cpu_max) == cores


def test_the_usable_cores_read_this_machine() -> None:
    import os

    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
        os.cpu_count() or 1)
    assert 1.0 <= usable_cores() <= affinity
