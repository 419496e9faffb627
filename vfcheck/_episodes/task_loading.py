"""An env's tasks in `load()` order, as a check run takes them: each with its `data.idx`,
an infinite taskset bounded by `-n` or the run's sample, and `load()`'s progress noted for
the `load` check's deadline (`vfcheck._episodes.load_progress`)."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterable
from typing import Any

from vfcheck._episodes.load_errors import EnvLoadError
from vfcheck._episodes.load_progress import LoadProgress


def load_tasks(env: Any, num_tasks: int | None, *, infinite_sample: int | None = None,
               progress: LoadProgress | None = None) -> list[Any]:
    """The env's tasks in `load()` order. An infinite taskset needs `num_tasks`, or
    `infinite_sample`: how many of its first tasks a check run takes (its `--sample`).
    `progress` notes each task as `load()` yields it (the `load` check's deadline)."""
    if num_tasks is None and infinite_sample is not None and is_infinite(env):
        num_tasks = infinite_sample
    return [with_index(task, i) for i, task in enumerate(_iterate(env, num_tasks, progress))]


def is_infinite(env: Any) -> bool:
    """Whether the env's taskset yields tasks forever (`Taskset.bounded` is 0.4's; older
    tasksets only say INFINITE)."""
    taskset = env.taskset
    return not getattr(taskset, "bounded", not getattr(taskset, "INFINITE", False))


def with_index(task: Any, position: int) -> Any:
    """The task with `data.idx` set (0.4's `Taskset.__iter__` sets it; older ones don't)."""
    if task.data.idx is not None:
        return task
    clone = copy.copy(task)
    clone.data = task.data.model_copy(update={"idx": position})
    return clone


def _iterate(env: Any, num_tasks: int | None, progress: LoadProgress | None) -> list[Any]:
    taskset = env.taskset
    if num_tasks is None and is_infinite(env):
        raise EnvLoadError(
            f"env {env.config.env_id!r}: {type(env.taskset).__name__} is infinite "
            "(INFINITE = True); bound it with -n N / --vf-num-tasks N"
        )
    tasks: Iterable[Any] = iter(taskset) if progress is None else progress.watch(taskset)
    return list(tasks if num_tasks is None else itertools.islice(tasks, num_tasks))
