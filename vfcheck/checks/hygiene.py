"""`hygiene`: env code leaves no process running, no file in the temp dir or the home
(`hygiene.files`: `vfcheck._host.files_left`), and asks nothing of the network that the run
does not serve (`hygiene.network`: `vfcheck.checks._network`).

`hygiene.processes`: env code leaves no process running once its hooks and episodes end.

A hook that starts a process (`subprocess.Popen(["sleep", "3600"])` in `setup`, a server
in a reward) and never reaps it leaks one process per task and episode: a training run
plays thousands, and the machine fills up. verifiers stops what it starts itself (harness
programs, tool servers) when its runtimes and `env.serving()` close; whatever still runs
below the check worker after that is the env's. A tool server of the env's toolsets that is
still running (verifiers' SIGTERM did not end it while a tool call was in progress) is named
as one, so that the message points at the tool rather than at unknown env code. A tool
server forked warm (`vfcheck._host.warm_starts`) is named by what it was asked to be, which
`/proc` does not show for it.

The worker makes itself a child subreaper (Linux `PR_SET_CHILD_SUBREAPER`), so a process
whose parent exits (`sh -c 'cmd &'`, a double fork) is re-parented to the worker rather
than to init and stays in view. Elsewhere (macOS) there is no subreaper: such an orphan
leaves the worker's tree unseen, and the finding says so. At the end of the run the worker
reports what is left, then kills it, whether or not this check was selected: vfcheck never
leaves it behind.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from vfcheck._host.files_left import FILE_WRITES, LeftFile
from vfcheck._host.leftovers import Leftover, leftovers, stop
from vfcheck._host.processes import is_subreaper
from vfcheck._shared.findings import Finding
from vfcheck.checks._context import CheckContext
from vfcheck.checks._network import (
    describe_connections,
    describe_refused,
    in_processes,
    in_worker,
)
from vfcheck.checks._registry import check, family, spec_of

PROCESSES_CHECK = "hygiene.processes"
NETWORK_CHECK = "hygiene.network"
FILES_CHECK = "hygiene.files"

family("hygiene", order=1000, summary="no process or file is left behind and no request "
       "leaves the machine.")
SETTLE = 3.0
"""Seconds processes get to exit on their own after the runners close (a harness program
that got SIGTERM) before they count as leaked."""
UNSEEN = ("Not seen: orphans (a process whose parent exited, as after `sh -c 'cmd &'` or a "
          "double fork): this platform re-parents them away from the worker, having no child "
          "subreaper (Linux only).")
"""What the check cannot see where the worker could not become a subreaper."""


async def settled_leftovers(root: int, settle: float = SETTLE) -> list[Leftover]:
    """`leftovers(root)` once they stop exiting on their own, or after `settle` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + settle
    found = leftovers(root)
    while found and loop.time() < deadline:
        await asyncio.sleep(0.1)
        found = leftovers(root)
    return found


def processes_finding(env_id: str, found: list[Leftover]) -> Finding:
    """The verdict on `found`; it names the blind spot when this process is no subreaper."""
    spec = spec_of(PROCESSES_CHECK)
    where = f"env {env_id!r}"
    subreaper = is_subreaper()
    unseen = "" if subreaper else f" {UNSEEN}"
    details = {"leftovers": [{"pid": p.pid, "cmdline": p.cmdline} for p in found],
               "subreaper": subreaper}
    if not found:
        return Finding(PROCESSES_CHECK, spec.family, None, "passed",
                       f"{where}: no process left running after the hooks and episodes"
                       f"{'.' if unseen else ''}{unseen}", details)
    servers = [p for p in found if p.tool_server]
    others = [p for p in found if not p.tool_server]
    parts = []
    if others:
        parts.append(f"{len(others)} process(es) started by env code were still running after "
                     f"every hook and episode had finished (vfcheck killed them): "
                     f"{listed(others)}")
    if servers:
        parts.append(f"{len(servers)} tool server(s) that verifiers started for the env's "
                     f"toolsets (one per rollout) outlived their episodes (vfcheck killed "
                     f"them): {listed(servers)}; verifiers stops them with SIGTERM when a "
                     "rollout ends, and a server whose tool call is still running may not exit "
                     "on it: look for a tool that blocks or never returns (see the episode "
                     "findings)")
    details["tool_servers"] = [p.pid for p in servers]
    return Finding(PROCESSES_CHECK, spec.family, None, "failed",
                   f"{where}: {PROCESSES_CHECK} failed — {'; and '.join(parts)}. "
                   f"Contract: {spec.contract}.{unseen}", details)


def listed(found: list[Leftover]) -> str:
    """`` `sleep 3600` (pids 4, 5)``: each command line once, with its pids."""
    by_line: dict[str, list[int]] = {}
    for p in found:
        by_line.setdefault(p.cmdline, []).append(p.pid)
    return "; ".join(
        f"`{line[:120]}` (pid{'s' if len(pids) > 1 else ''} {', '.join(map(str, pids))})"
        for line, pids in by_line.items()
    )


@check(
    PROCESSES_CHECK, family="hygiene", scope="env", phase="after", budget=0.0,
    extra_seconds=SETTLE, blocked_by_setup=False,
    contract="env code leaves no process running after its hooks and episodes finish",
    fails_when="once every check is done and verifiers has closed its runners, a process still "
    "runs below the check worker (a child of env code, or an orphan the worker adopted as child "
    "subreaper, Linux only: elsewhere orphans are out of sight and the message says so); the "
    "message names each command line and pid, and vfcheck kills them (whether or not the check "
    "was selected)",
    why="a hook that starts a process and never reaps it leaks one per task and episode",
)
async def processes(ctx: CheckContext, _: Any) -> Finding:
    found = await settled_leftovers(os.getpid())
    stop(found)
    return processes_finding(ctx.env_id, found)


@check(
    NETWORK_CHECK, family="hygiene", scope="env", phase="after", budget=0.0, blocked_by_setup=False,
    contract="env code makes no HTTP request or connection the offline run does not serve: "
    "only the model and judge endpoints are mocked, and a script's `[[http]]` entries answer "
    "the rest",
    fails_when="a hook, reward or judge wrapper running in the check worker made an httpx "
    "request to a non-loopback URL that is neither the model nor the judge endpoint and no "
    "`[[http]]` entry of the script serves, or opened a connection to another host by other "
    "means (requests, urllib, aiohttp, a socket: refused at the socket), also when env code "
    "caught the error; the message names each method and URL (host and port, and the code "
    "that connected), the task and stage that made it, and the entry that would serve it; "
    "also a connection to another host from a tool server, refused there (any Python process "
    "below the worker that can import vfcheck: not a harness program's own environment)",
    why="CI and training clusters run offline: a reward that needs a remote grader raises or "
    "scores 0 there, and an `except` makes it silent",
)
async def network(ctx: CheckContext, _: Any) -> Finding:
    from vfcheck._host.child_sockets import child_log_of, read_child_attempts
    from vfcheck._host.offline_sockets import OFFLINE_SOCKETS

    lab = ctx.opened("episode_lab")
    sockets = OFFLINE_SOCKETS.taken()
    children = read_child_attempts(child_log_of(Path(ctx.spec["events"])))
    if lab is None and not sockets and not children:
        return ctx.finding(NETWORK_CHECK, None, "skipped",
                           "no check ran under the scripted model (nothing to look back at)")
    refused = lab.runner.model.http.taken() if lab is not None else []
    if not refused and not sockets and not children:
        return ctx.finding(NETWORK_CHECK, None, "passed",
                           "env code made no HTTP request outside the model and judge "
                           "endpoints, and opened no connection to another host, in the "
                           "check worker or in the tool servers")
    from vfcheck._model.offline_http import serve_hint

    parts, details = [], {}
    if refused:
        listed, details["requests"] = describe_refused(refused)
        first = refused[0]
        parts.append(
            f"env code made {len(refused)} HTTP request(s) that vfcheck does not serve: "
            f"{listed}. vfcheck runs offline (only the model and judge endpoints are mocked), "
            f"so each got a connection error. Serve it from a --script file, e.g. "
            f"{serve_hint(first.method, first.url)}")
    if sockets:
        listed, details["connections"] = describe_connections(sockets, in_worker)
        parts.append(
            f"env code opened {len(sockets)} connection(s) to other hosts outside httpx "
            f"(requests, urllib, aiohttp or a socket), which vfcheck refused: {listed}. "
            "vfcheck runs offline and can serve only httpx requests (a --script file's "
            "[[http]] entries): make the call with httpx to check the env offline")
    if children:
        listed, details["processes"] = describe_connections(children, in_processes)
        parts.append(
            f"env code in processes of their own (tool servers) opened {len(children)} "
            f"connection(s) to other hosts, which vfcheck refused: {listed}. vfcheck runs "
            "offline and cannot serve a process of its own: give the tool a stand-in on this "
            "machine (a config field naming the service's URL) to check the env offline")
    return ctx.finding(NETWORK_CHECK, None, "failed", "; and ".join(parts),
                       **details)  # ctx adds the contract


@check(
    FILES_CHECK, family="hygiene", scope="env", phase="after", budget=0.0,
    blocked_by_setup=False,
    contract="env code leaves no file in the temp dir or the home once its hooks and episodes "
    "finish (an episode's files belong in its work dir, which verifiers removes)",
    fails_when="once every check is done and verifiers has closed its runners, a file or dir "
    "that env code in the check worker created under the temp dirs or HOME (outside "
    "verifiers' runtime work dirs) still exists, or anything is left in the worker's own "
    "TMPDIR (a process env code started wrote it); the message names each path and the hook, "
    "task and file:line that created it",
    why="a hook that leaves one scratch file per episode fills a training node's disk",
)
async def files(ctx: CheckContext, _: Any) -> Finding:
    left = FILE_WRITES.left()
    if not left:
        return ctx.finding(FILES_CHECK, None, "passed",
                           "env code left no file in the temp dir or the home")
    return ctx.finding(
        FILES_CHECK, None, "failed",
        f"{len(left)} file(s) that env code created outside the episodes' work dirs were "
        f"still there after every hook and episode had finished: {files_listed(left)}. "
        "Remove them in the hook that makes them (or in `finalize`), or write them in the "
        "episode's work dir (the runtime's), which verifiers removes",
        files=[{"path": f.path, "hook": f.made.hook, "index": f.made.index, "at": f.made.at,
                "entries": f.entries} for f in left])  # ctx adds the contract


def files_listed(left: list[LeftFile]) -> str:
    """`` `<temp dir>/x` (made by VfcTask.setup of task 1 at my_env.py:30) ``, each."""
    parts = []
    for f in left[:10]:
        made = f.made
        if made.hook is None:
            who = "made by a process below the check worker"
        else:
            task = f" of task {made.index}" if made.index is not None else ""
            who = f"made by {made.hook}{task} at {made.at}"
        holds = f", holding {f.entries} entries" if f.entries else ""
        parts.append(f"`{f.path}` ({who}{holds})")
    more = f"; and {len(left) - 10} more" if len(left) > 10 else ""
    return "; ".join(parts) + more
