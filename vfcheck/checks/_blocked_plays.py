"""Plays that end before their first model request, kept per task and runner, so that the
episode lab need not play more of them (`vfcheck.checks._lab.EpisodeLab`).

Such a play asks the model nothing: its policy never came into play. A harness that cannot
reach a remote toolset offline (verifiers' deepwiki) retries it for ~20 s in each play, and
every reply-judging check would pay that again. Once `ALIKE` plays of a task on one runner
ended so for the same reason, with no request made (a judge's included: its verdict is the
policy's) and no play of it there otherwise, the later ones get the first. Runners count
apart: the hang's short agent timeout ends its plays first. Nothing here imports verifiers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

ALIKE = 2
"""Plays that must end before the model, for the same reason, before the rest are not
played."""


class BlockedPlays:
    """Per task and runner: its plays that ended before the model, or that it has one that
    did not (and so is played every time). `reason` is the lab's `blocked_before_model`."""

    def __init__(self, reason: Callable[[Any], str | None]) -> None:
        self.reason = reason
        self._seen: dict[tuple[int, int], tuple[Any, str, int]] = {}
        """Per (task, runner): its first play that ended before the model, why, and how
        many ended so."""
        self._played_through: set[tuple[int, int]] = set()

    def answer(self, index: int, runner: Any) -> Any:
        """The play that answers task `index`'s next play on `runner`, if one does."""
        key = (index, id(runner))
        first, _, count = self._seen.get(key, (None, "", 0))
        return None if key in self._played_through or count < ALIKE else first

    def note(self, index: int, runner: Any, result: Any, model: Any) -> None:
        """Note how `result`, a play of task `index` on `runner`, ended; `model` is the
        scripted model that answered the run (None: never reuse)."""
        key = (index, id(runner))
        reason = self.reason(result)
        first, why, count = self._seen.get(key, (result, reason, 0))
        asked = model is None or bool(model.requests_of(t.id for t in result.traces))
        if reason is None or asked or why != reason:
            self._played_through.add(key)
        else:
            self._seen[key] = (first, why, count + 1)

    def forget(self, index: int) -> None:
        """Task `index` plays anew (a unit run again alone)."""
        for key in [k for k in self._seen if k[0] == index]:
            del self._seen[key]
            self._played_through.discard(key)
