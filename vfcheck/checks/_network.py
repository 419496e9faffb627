"""What `hygiene.network` reports: env code asks nothing of the network that the run does not
serve.

vfcheck runs offline, like CI and most training clusters: the model and the judge are the
only endpoints it mocks. A reward that asks a remote grader, a setup that fetches a file,
gets a connection error there (`vfcheck._model.offline_http`), which the check that hit it
reports in its own terms, and which env code may also swallow (`except httpx.HTTPError:
return 0.0`) and score silently. This check looks back at the run's log of refused requests,
which no `except` hides, and names each one with the stage and task that made it and the
script entry that would serve it. Connections made by other means (requests, urllib,
aiohttp, a socket) are refused at the socket (`vfcheck._host.offline_sockets`) and
named the same way, with the env code that made them; so are those of the tool servers
and other Python processes below the worker (`vfcheck._host.child_sockets`). A `load()`
that reaches the network fails `load` instead: the taskset loads with no network at all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def describe_refused(refused: list[Any]) -> tuple[str, list[dict[str, Any]]]:
    """`GET https://x/y, 6 times (tasks 0, 1 in the scoring stage of an episode; task 2 in
    vf-validate's gold check)`, one entry per method and URL, and the same as details."""
    parts, details = [], []
    for (method, url), made in grouped(refused, lambda r: (r.method, r.url)).items():
        by_stage = stages_of(made)
        count = f", {len(made)} times" if len(made) > 1 else ""
        parts.append(f"{method} {url}{count} (from {'; '.join(places(by_stage))})")
        details.append({"method": method, "url": url, "count": len(made), "where": by_stage})
    return "; ".join(parts), details


def grouped(items: list[Any], key: Callable[[Any], Any]) -> dict[Any, list[Any]]:
    """`items` by `key`, in order of first arrival."""
    groups: dict[Any, list[Any]] = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    return groups


def stages_of(made: list[Any]) -> dict[str, list[str]]:
    """Stage -> the tasks that made `made` there (`OfflineRequest`s or `Attempt`s: `stage`,
    `task` a TaskRef or None), indices in order, `no task` last."""
    by_stage: dict[str, set[int | None]] = {}
    for item in made:
        by_stage.setdefault(item.stage, set()).add(None if item.task is None
                                                   else item.task.index)
    return {stage: [str(i) for i in sorted(t for t in tasks if t is not None)]
            + (["no task"] if None in tasks else []) for stage, tasks in by_stage.items()}


def places(by_stage: dict[str, list[str]]) -> list[str]:
    """`tasks 0, 1 in the scoring stage of an episode`, a stage each."""
    return ["no task in " + stage if tasks == ["no task"]
            else f"{'task' if len(tasks) == 1 else 'tasks'} {', '.join(tasks)} in {stage}"
            for stage, tasks in by_stage.items()]


def describe_connections(attempts: list[Any], where: Callable[[list[Any]], tuple[
        list[str], dict[str, Any]]]) -> tuple[str, list[dict[str, Any]]]:
    """`grader.example.org:443, 2 times (reward 'grade' at my_env.py:41; <where>)`, one entry
    per host and port, and the same as details; `where` says where those were made (in
    words, and as details)."""
    from vfcheck._host.offline_sockets import target_of

    parts, details = [], []
    for (host, port), made in grouped(attempts, lambda a: (a.host, a.port)).items():
        codes = list(dict.fromkeys(a.code for a in made))
        shown, more = where(made)
        count = f", {len(made)} times" if len(made) > 1 else ""
        parts.append(f"{target_of(host, port)}{count} ({'; '.join([*codes, *shown])})")
        details.append({"host": host, "port": port, "count": len(made), "code": codes, **more})
    return "; ".join(parts), details


def in_worker(made: list[Any]) -> tuple[list[str], dict[str, Any]]:
    """`tasks 0, 1 in the scoring stage of an episode` (`Attempt`s of the check worker)."""
    by_stage = stages_of(made)
    return places(by_stage), {"where": by_stage}


def in_processes(made: list[Any]) -> tuple[list[str], dict[str, Any]]:
    """`the tool server python -m my_env, 3 processes` (`ChildAttempt`s)."""
    processes = {process: len({a.pid for a in ones})
                 for process, ones in grouped(made, lambda a: a.process).items()}
    return [f"{p}, {n} processes" if n > 1 else p for p, n in processes.items()], {
        "processes": processes}
