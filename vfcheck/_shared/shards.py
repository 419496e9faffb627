"""Shards of a run for CI matrices: `--shard K/N` (`--vf-shard K/N`) checks the K-th of N
deterministic, balanced parts of the env ids, and `vfcheck merge` joins their reports.

The part depends on the env ids alone, never on a hash or the machine: the ids are sorted
(repeats dropped) and shard K takes every N-th one from the K-th, so each shard gets
⌊n/N⌋ or ⌈n/N⌉ envs and every job of a matrix computes the same split.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Shard:
    index: int
    """K, from 1."""
    count: int
    """N."""

    @classmethod
    def parse(cls, text: str) -> Shard:
        """`K/N` with 1 <= K <= N; ValueError (one line) otherwise."""
        found = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
        if found is None:
            raise ValueError(f"{text!r} is not K/N (shard K of N, e.g. 2/3)")
        index, count = int(found[1]), int(found[2])
        if not 1 <= index <= count:
            raise ValueError(f"{text!r}: shard K of N needs 1 <= K <= N")
        return cls(index, count)

    @property
    def label(self) -> str:
        return f"{self.index}/{self.count}"

    def pick(self, env_ids: list[str]) -> list[str]:
        """This shard's env ids, sorted."""
        ordered = sorted(set(env_ids))
        return [env for i, env in enumerate(ordered) if i % self.count == self.index - 1]

    def empty_note(self, env_ids: list[str]) -> str:
        """Why this shard checks nothing (more shards than envs)."""
        total = len(set(env_ids))
        return (f"shard {self.label} has no envs: {total} env(s) over {self.count} shards; "
                "nothing to check here, the other shards check them")

    def as_dict(self, env_ids: list[str]) -> dict[str, Any]:
        """The JSON report's `shard`: which part, of which env ids (`vfcheck merge` proves
        from it that every shard of a run came, and no env is missing)."""
        return {"index": self.index, "count": self.count, "of": sorted(set(env_ids))}
