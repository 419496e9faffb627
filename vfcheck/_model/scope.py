"""Which episode a judge call belongs to: a context variable the runner sets around a play.

A judge call carries no `X-Session-ID` (`verifiers/v1/judge.py` builds its own openai client
over httpx), so nothing in the request names its trace. It is made by env code while the
episode is scored, inside `env.run_slot`: the tasks `run_slot` creates copy the context of
the play that started them, and the respx mock answers in the caller's task, so a judge call
under the mock sees the scope of the episode being scored.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from vfcheck._model.types import EpisodeRef, TaskRef

_CURRENT: ContextVar[EpisodeRef | None] = ContextVar("vfcheck_episode", default=None)


@contextmanager
def episode_scope(ref: EpisodeRef) -> Iterator[EpisodeRef]:
    """Attribute the judge calls made inside (and in tasks created inside) to `ref`."""
    token = _CURRENT.set(ref)
    try:
        yield ref
    finally:
        _CURRENT.reset(token)


def current_episode() -> EpisodeRef | None:
    """The episode of the innermost `episode_scope`, None outside any."""
    return _CURRENT.get()


def current_place() -> tuple[TaskRef | None, str]:
    """The task and stage env code runs in now, for a refused request's message: the
    scope's task and its stage (`the scoring stage of an episode`), `a check` where the
    scope names no stage, or neither outside any scope."""
    episode = current_episode()
    if episode is None:
        return None, "no episode or check known"
    return episode.task, episode.stage() if episode.stage is not None else "a check"
