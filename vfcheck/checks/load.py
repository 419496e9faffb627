"""`load` and `determinism.load`: the env resolves, loads offline, and loads the same twice.

A `load()` that reaches for the network must fail fast and say so, not wait for a hub
timeout: while the taskset loads, every connection to a non-loopback address is refused
and remembered (`no_network`). The hub libraries' offline flags are set as well.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import traceback
from collections.abc import Awaitable, Iterator
from pathlib import Path
from typing import Any

from vfcheck.checks.context import CheckContext
from vfcheck.checks.registry import check, early, spec_of, worker_mode
from vfcheck.findings import Finding
from vfcheck.host import offline_sockets
from vfcheck.host.attempts import deadline_hit
from vfcheck.host.env_code import aborted_by as aborted_by
from vfcheck.host.processes import WORKER_HASH_SEED
from vfcheck.paths import shown_path

LOAD_TIMEOUT = 60.0
"""Seconds `load()` may take at least (the per-check timeout when that is longer): loading
imports the env's modules, which a machine under load makes slow."""


class LoadAborted(Exception):
    """The env's module or `load()` raised a `BaseException` that is no `Exception`
    (`sys.exit()`, a `KeyboardInterrupt` of its own): it would end any process loading it."""


@contextlib.contextmanager
def no_network(attempts: list[str]) -> Iterator[None]:
    """Refuse (and record in `attempts`) name lookups of and connections to non-local hosts
    (`vfcheck.host.offline_sockets`). Patches the socket module, never verifiers."""
    def refuse(host: str, port: int | None) -> str:
        attempts.append(host)
        return f"vfcheck: no network while the taskset loads ({host})"

    with offline_sockets.no_network(refuse):
        yield


def load_finding(env_id: str, outcome: str, message: str, **details: Any) -> Finding:
    return Finding("load", "load", None, outcome, message, details)  # type: ignore[arg-type]


def check_keys(env_id: str, tasks: list[Any]) -> Finding:
    """The loaded tasks pass `load` when there is at least one and keys are unique."""
    if not tasks:
        return load_finding(
            env_id, "failed",
            f"env {env_id!r}: load() yielded no task. Contract: {spec_of('load').contract}.",
        )
    seen: dict[str, int] = {}
    repeats = []
    for task in tasks:
        key = str(task.key)
        if key in seen:
            repeats.append({"key": key, "indices": [seen[key], task.data.idx]})
        else:
            seen[key] = task.data.idx
    if repeats:
        first = repeats[0]
        return load_finding(
            env_id, "failed",
            f"env {env_id!r}: task keys repeat: {first['key']!r} is the key of tasks "
            f"{first['indices'][0]} and {first['indices'][1]}"
            + (f" (and {len(repeats) - 1} more)" if len(repeats) > 1 else "")
            + f". Contract: {spec_of('load').contract} (Task.key is a stable identity: "
            "override it, or set TaskData.id).",
            repeats=repeats,
        )
    return load_finding(env_id, "passed", f"env {env_id!r}: {len(tasks)} task(s), keys unique")


def task_hashes(tasks: list[Any]) -> list[str]:
    return [str(t.hash) for t in tasks]


FRESH_HASH_SEED = 2
"""The other load's, in a fresh interpreter started with the worker (the two imports overlap)."""


@worker_mode("hashes")
def print_hashes(spec: dict[str, Any]) -> None:
    """The worker's `--hashes` mode: this interpreter's load, as `Task.hash` per task (one
    JSON line on stdout)."""
    from vfcheck.episodes.offline import prepare_process_env
    from vfcheck.episodes.runner import load_env, load_tasks

    options = spec["options"]  # `CheckOptions.as_dict()`: the option table is above checks
    prepare_process_env(options.get("paths") or [])
    with no_network([]):
        env, _ = load_env(spec["env_id"], options.get("env_args") or {},
                          harness=options.get("harness"))
        tasks = load_tasks(env, options.get("num_tasks"))
    print(json.dumps(task_hashes(tasks)))


async def hashes_in_fresh_interpreter(spec: dict[str, Any], hash_seed: int) -> list[str]:
    """`Task.hash` of every task, loaded by another interpreter with `PYTHONHASHSEED`."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "vfcheck.isolation.worker", "--hashes",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONHASHSEED": str(hash_seed)},
    )
    try:
        out, err = await proc.communicate(json.dumps(spec).encode())
    finally:
        if proc.returncode is None:  # cancelled (the env did not load): don't leave it behind
            proc.kill()
            await proc.wait()
    if proc.returncode != 0:
        tail = err.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"the load in a fresh interpreter failed (exit {proc.returncode}): "
                           f"{tail[0]}")
    result: list[str] = json.loads(out.decode().strip().splitlines()[-1])
    return result


async def compare_loads(env_id: str, fresh: Awaitable[list[str]], own: list[str]) -> Finding:
    """The worker's own load (PYTHONHASHSEED=1) and a fresh interpreter's (=2) must list the
    same hashes. Two loads, not three: the worker's is a fresh interpreter's first load too,
    and each extra interpreter costs a verifiers import (seconds)."""
    other = await fresh
    runs = {f"PYTHONHASHSEED={WORKER_HASH_SEED}": own, f"PYTHONHASHSEED={FRESH_HASH_SEED}": other}
    if other != own:
        diverge = next(
            (i for i, (a, b) in enumerate(zip(own, other, strict=False)) if a != b),
            min(len(own), len(other)),
        )
        return Finding(
            "determinism.load", "determinism", None, "failed",
            f"env {env_id!r}: two loads gave different tasks: the loads with "
            f"PYTHONHASHSEED={WORKER_HASH_SEED} and ={FRESH_HASH_SEED} first differ at task "
            f"{diverge} ({len(own)} vs {len(other)} tasks; compare Task.hash). Contract: "
            f"{spec_of('determinism.load').contract} (iterate sorted(), not a set).",
            {"hashes": {k: v[:50] for k, v in runs.items()}, "first_difference": diverge},
        )
    return Finding(
        "determinism.load", "determinism", None, "passed",
        f"env {env_id!r}: {len(own)} task hash(es) identical across two fresh interpreters", {},
    )


@check(
    "load", family="load", scope="env", phase="gate", budget=1.0, min_timeout=LOAD_TIMEOUT,
    contract="the id resolves to exactly one taskset whose load() yields tasks with unique "
    "keys, offline",
    fails_when="the id does not resolve to exactly one taskset, the module fails to import, "
    "`load()` raises or reaches the network (refused at once: no socket leaves the machine while "
    "a taskset loads), it yields no task, or task keys repeat",
    why="every other check, and every training run, starts from `load()`",
)
async def load(ctx: CheckContext, _: Any) -> Finding:
    """Load the env, its tasks and role tiers into `ctx` (only when the finding passes)."""
    from vfcheck.episodes.load_errors import EnvArgError, EnvLoadError
    from vfcheck.episodes.runner import load_env, load_tasks

    attempts: list[str] = []

    def load_all() -> tuple[Any, list[Any], list[Any]]:
        try:
            with no_network(attempts):
                env, tiers = load_env(ctx.env_id, ctx.env_args, harness=ctx.harness,
                                      script_tools=ctx.script_tools)
                return env, tiers, load_tasks(env, ctx.num_tasks)
        except Exception:
            raise
        except BaseException as e:  # sys.exit() at import is the env's finding
            raise LoadAborted(aborted_by(e)) from e

    budget = max(ctx.timeout, LOAD_TIMEOUT)
    contract = spec_of("load").contract
    try:
        env, tiers, tasks = await asyncio.wait_for(asyncio.to_thread(load_all), budget)
    except TimeoutError:
        deadline_hit(f"loading did not finish within {budget:g}s")
        return load_finding(ctx.env_id, "failed",
                            f"env {ctx.env_id!r}: loading did not finish within {budget:g}s "
                            f"(an infinite or hanging load()?). Contract: {contract}.")
    except EnvArgError as e:  # the user's input: the front ends make it a usage error
        return load_finding(ctx.env_id, "error", str(e), usage=True)
    except EnvLoadError as e:
        message = str(e).rstrip(".")
        if attempts:
            message = (f"env {ctx.env_id!r}: load() reached for the network "
                       f"({', '.join(sorted(set(attempts)))}); vfcheck runs offline")
        return load_finding(ctx.env_id, "failed", f"{message}. Contract: {contract}.",
                            network=attempts)
    except LoadAborted as e:
        return load_finding(
            ctx.env_id, "failed",
            f"env {ctx.env_id!r}: loading the env module or its taskset {e}; it would end "
            f"any process that loads it (vf-eval, a trainer). Contract: {contract}.",
            traceback=traceback.format_exc())
    except Exception as e:  # noqa: BLE001 - load() raising is the env's load finding
        message = f"{type(e).__name__}: {e}"
        if attempts:
            message = (f"load() reached for the network "
                       f"({', '.join(sorted(set(attempts)))})")
        return load_finding(ctx.env_id, "failed",
                            f"env {ctx.env_id!r}: {message}. Contract: {contract}.",
                            network=attempts, traceback=traceback.format_exc())
    finding = check_keys(ctx.env_id, tasks)
    if finding.outcome == "passed" and (stray := script_strays(ctx, tasks)):
        return load_finding(
            ctx.env_id, "error",
            f"env {ctx.env_id!r}: the script {shown_path(Path(ctx.script or ''))} lists "
            f"{stray}; vfcheck did not "
            "check the env with a script it cannot follow (fix the entry's key or index)",
            usage=True)
    if finding.outcome == "passed":
        ctx.env, ctx.tiers, ctx.tasks = env, tiers, tasks
    return finding


def script_strays(ctx: CheckContext, tasks: list[Any]) -> str:
    """`[[task]] 2 (key 'nope'), which matches none of its 3 tasks (keys ...)`: the script's
    `[[task]]` entries no loaded task matches; empty when all match, or when `num_tasks`
    cut the load short (the entry may name a task left out)."""
    script = ctx.script_file
    if script is None or ctx.num_tasks is not None:
        return ""
    from vfcheck.model import TaskRef

    strays = script.unmatched([TaskRef(t.data.idx, str(t.key)) for t in tasks])
    if not strays:
        return ""
    keys = ", ".join(repr(str(t.key)) for t in tasks[:5]) + (", ..." if len(tasks) > 5 else "")
    return (f"{' and '.join(strays)}, which match{'es' if len(strays) == 1 else ''} none of "
            f"its {len(tasks)} task(s) (indices 0-{len(tasks) - 1}, keys {keys})")


def hash_spec(ctx: CheckContext) -> dict[str, Any]:
    """What the fresh interpreter of `determinism.load` needs to load the env alike."""
    return {"env_id": ctx.env_id, "options": ctx.spec["options"]}


def start_fresh_load(ctx: CheckContext) -> None:
    """Start the other load now, so that its verifiers import overlaps the worker's."""
    ctx.extras["fresh_hashes"] = asyncio.ensure_future(
        hashes_in_fresh_interpreter(hash_spec(ctx), FRESH_HASH_SEED))


@check(
    "determinism.load", family="determinism", scope="env", budget=2.0,
    min_timeout=LOAD_TIMEOUT, prepare=start_fresh_load,
    contract="two loads in fresh interpreters give the same tasks in the same order",
    fails_when="two loads in fresh interpreters (the check worker's own, PYTHONHASHSEED 1, and "
    "one started beside it, 2) give different `Task.hash` sequences",
    why="resume, replay and splits address tasks by position and hash",
)
async def determinism_load(ctx: CheckContext, _: Any) -> Finding:
    if "fresh_hashes" not in ctx.extras:
        start_fresh_load(ctx)
    return await compare_loads(ctx.env_id, ctx.extras["fresh_hashes"], task_hashes(ctx.tasks))


@early
async def rejected_env_args(ctx: CheckContext) -> Finding | None:
    """Why the env's config type rejects the user's env args (an unknown key, a wrong
    type), found from the config alone before anything else starts (the fresh load of
    `determinism.load`, the env's own load): a usage error in seconds. Anything else
    is left to the `load` check, which reports it."""
    from vfcheck.episodes.load_errors import rejected_args
    from vfcheck.episodes.offline import offline_env_config

    args = ctx.options.env_args
    if not args:
        return None

    def config_error() -> Exception | None:
        try:
            with no_network([]):
                offline_env_config(ctx.env_id, args)
        except Exception as e:  # noqa: BLE001 - the load check reports the env's own
            return e
        except BaseException:  # noqa: BLE001 - sys.exit() at import: `load`'s finding
            return None
        return None

    try:
        error = await asyncio.wait_for(asyncio.to_thread(config_error),
                                       max(ctx.timeout, LOAD_TIMEOUT))
    except TimeoutError:
        return None
    rejected = None if error is None else rejected_args(ctx.env_id, args, error)
    return None if rejected is None else load_finding(ctx.env_id, "error", rejected, usage=True)
