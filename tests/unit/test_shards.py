"""The partition of env ids (`vfcheck._shared.shards`) and its refusals."""

from __future__ import annotations

import pytest

from vfcheck._shared.shards import Shard


@pytest.mark.parametrize("count", range(1, 9))
def test_shards_partition_the_env_ids_in_balanced_parts(count: int) -> None:
    for n in range(0, 30):
        envs = [f"env-{(i * 7) % 30:02d}" for i in range(n)]
        parts = [Shard(k, count).pick(envs) for k in range(1, count + 1)]
        assert sorted(e for part in parts for e in part) == sorted(envs)  # each env once
        assert {len(part) for part in parts} <= {n // count, -(-n // count)}
        # the same split whatever order (or repeats) the ids were given in
        shuffled = list(reversed(envs)) + envs[:2]
        assert [Shard(k, count).pick(shuffled) for k in range(1, count + 1)] == parts


@pytest.mark.parametrize("text", ["0/3", "4/3", "1/0", "x", "2", "-1/2", "1/2/3"])
def test_a_shard_outside_1_to_n_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="K"):
        Shard.parse(text)
    assert Shard.parse(" 2/3 ") == Shard(2, 3)
