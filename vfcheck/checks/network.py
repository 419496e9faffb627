"""`hygiene.network`: env code asks nothing of the network that the run does not serve.

vfcheck runs offline, like CI and most training clusters: the model and the judge are the
only endpoints it mocks. A reward that asks a remote grader, a setup that fetches a file,
gets a connection error there (`vfcheck.model.offline_http`), which the check that hit it
reports in its own terms, and which env code may also swallow (`except httpx.HTTPError:
return 0.0`) and score silently. This check looks back at the run's log of refused requests,
which no `except` hides, and names each one with the stage and task that made it and the
script entry that would serve it. A `load()` that reaches the network fails `load` instead:
the taskset loads with no network at all.
"""

from __future__ import annotations

from typing import Any

from vfcheck.checks.context import CheckContext
from vfcheck.checks.registry import check
from vfcheck.findings import Finding

CHECK = "hygiene.network"


def describe_refused(refused: list[Any]) -> tuple[str, list[dict[str, Any]]]:
    """`GET https://x/y, 6 times (tasks 0, 1 in the scoring stage of an episode; task 2 in
    vf-validate's gold check)`, one entry per method and URL, and the same as details."""
    grouped: dict[tuple[str, str], list[Any]] = {}
    for request in refused:
        grouped.setdefault((request.method, request.url), []).append(request)
    parts, details = [], []
    for (method, url), made in grouped.items():
        by_stage: dict[str, dict[str, None]] = {}
        for request in made:
            tasks = by_stage.setdefault(request.stage, {})
            tasks.setdefault("no task" if request.task is None else str(request.task.index), None)
        where = [f"{'task' if len(tasks) == 1 else 'tasks'} {', '.join(tasks)} in {stage}"
                 .replace("task no task", "no task")
                 for stage, tasks in by_stage.items()]
        count = f", {len(made)} times" if len(made) > 1 else ""
        parts.append(f"{method} {url}{count} (from {'; '.join(where)})")
        details.append({"method": method, "url": url, "count": len(made),
                        "where": {stage: list(tasks) for stage, tasks in by_stage.items()}})
    return "; ".join(parts), details


@check(
    CHECK, family="hygiene", scope="env", phase="after", budget=0.0, blocked_by_setup=False,
    contract="env code makes no HTTP request the offline run does not serve: only the model "
    "and judge endpoints are mocked, and a script's `[[http]]` entries answer the rest",
    fails_when="a hook, reward or judge wrapper running in the check worker made an httpx "
    "request to a non-loopback URL that is neither the model nor the judge endpoint and no "
    "`[[http]]` entry of the script serves (also when env code caught the error); the message "
    "names each method and URL, the task and stage that made it, and the entry that would "
    "serve it. Requests from tool servers and harness programs (processes of their own) and "
    "from other HTTP libraries are out of its sight",
    why="CI and training clusters run offline: a reward that needs a remote grader raises or "
    "scores 0 there, and an `except` makes it silent",
)
async def network(ctx: CheckContext, _: Any) -> Finding:
    lab = ctx.opened("episode_lab")
    if lab is None:
        return ctx.finding(CHECK, None, "skipped",
                           "no check ran under the scripted model (nothing to look back at)")
    refused = lab.runner.model.http.taken()
    if not refused:
        return ctx.finding(CHECK, None, "passed",
                           "env code made no HTTP request outside the model and judge endpoints")
    from vfcheck.model.offline_http import serve_hint

    listed, details = describe_refused(refused)
    first = refused[0]
    return ctx.finding(
        CHECK, None, "failed",
        f"env code made {len(refused)} HTTP request(s) that vfcheck does not "
        f"serve: {listed}. vfcheck runs offline (only the model and judge endpoints are "
        f"mocked), so each got a connection error. Serve it from a --script file, e.g. "
        f"{serve_hint(first.method, first.url)}", requests=details)  # ctx adds the contract
