"""`load`: the env resolves to one taskset and loads offline, with unique task keys.

A `load()` that reaches for the network must fail fast and say so, not wait for a hub
timeout: while the taskset loads, every connection to a non-loopback address is refused
and remembered (`no_network`). The hub libraries' offline flags are set as well.
"""

from __future__ import annotations

import asyncio
import contextlib
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from vfcheck._episodes.load_progress import LoadProgress
from vfcheck._host import offline_sockets
from vfcheck._host.attempts import deadline_hit
from vfcheck._host.env_code import aborted_by as aborted_by
from vfcheck._shared.findings import Finding
from vfcheck._shared.paths import shown_path
from vfcheck.checks._context import CheckContext
from vfcheck.checks._registry import check, early, family, spec_of

family("load", order=10, summary="the env id resolves to one taskset, `load()` yields tasks with "
       "unique keys, offline.")

LOAD_TIMEOUT = 60.0
"""Seconds `load()` may take at least (the per-check timeout when that is longer): loading
imports the env's modules, which a machine under load makes slow."""


def load_deadline(ctx: CheckContext) -> float:
    """Seconds loading may take (`CheckSpec.timeout` of `load`)."""
    return spec_of("load").timeout(ctx.timeout, ctx.options.load_timeout)


class LoadAborted(Exception):
    """The env's module or `load()` raised a `BaseException` that is no `Exception`
    (`sys.exit()`, a `KeyboardInterrupt` of its own): it would end any process loading it."""


@contextlib.contextmanager
def no_network(attempts: list[str]) -> Iterator[None]:
    """Refuse (and record in `attempts`) name lookups of and connections to non-local hosts
    (`vfcheck._host.offline_sockets`). Patches the socket module, never verifiers."""
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


@check(
    "load", family="load", scope="env", phase="gate", budget=1.0, min_timeout=LOAD_TIMEOUT,
    contract="the id resolves to exactly one taskset whose load() yields tasks with unique "
    "keys, offline",
    fails_when="the id does not resolve to exactly one taskset, the module fails to import, "
    "`load()` raises or reaches the network (refused at once: no socket leaves the machine while "
    "a taskset loads), it yields no task, task keys repeat, or loading outlives its deadline "
    "(--load-timeout, else the longer of --timeout and 60 s) with no task coming (a `load()` "
    "still yielding tasks then is an `error` naming --load-timeout)",
    why="every other check, and every training run, starts from `load()`",
)
async def load(ctx: CheckContext, _: Any) -> Finding:
    """Load the env, its tasks and role tiers into `ctx` (only when the finding passes)."""
    from vfcheck._episodes.load_errors import EnvArgError, EnvLoadError, env_site
    from vfcheck._episodes.runner import load_env
    from vfcheck._episodes.task_loading import is_infinite, load_tasks

    attempts: list[str] = []
    infinite: list[str] = []  # the taskset's class name, when it yields tasks forever
    progress = LoadProgress()

    def load_all() -> tuple[Any, list[Any], list[Any]]:
        progress.begin()
        try:
            with no_network(attempts):
                env, tiers = load_env(ctx.env_id, ctx.env_args, harness=ctx.harness,
                                      script_tools=ctx.script_tools)
                if ctx.num_tasks is None and is_infinite(env):
                    infinite.append(type(env.taskset).__name__)
                return env, tiers, load_tasks(env, ctx.num_tasks, progress=progress,
                                              infinite_sample=ctx.options.sample)
        except Exception:
            raise
        except BaseException as e:  # sys.exit() at import is the env's finding
            raise LoadAborted(aborted_by(e)) from e

    budget = load_deadline(ctx)
    contract = spec_of("load").contract
    try:
        env, tiers, tasks = await asyncio.wait_for(asyncio.to_thread(load_all), budget)
    except TimeoutError:
        progress.stop.set()  # a load still yielding stops at its next task
        deadline_hit(f"loading did not finish within {budget:g}s")
        return out_of_time(ctx.env_id, budget, progress)
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
        message = f"{type(e).__name__}: {e}{env_site(e)}"
        if attempts:
            message = (f"load() reached for the network "
                       f"({', '.join(sorted(set(attempts)))})")
        return load_finding(ctx.env_id, "failed",
                            f"env {ctx.env_id!r}: {message}. Contract: {contract}.",
                            network=attempts, traceback=traceback.format_exc())
    finding = check_keys(ctx.env_id, tasks)
    if finding.outcome == "passed" and infinite:
        finding = infinite_sampled(finding, infinite[0], len(tasks))
        ctx.num_tasks = len(tasks)  # the rest of the run sees the bound it took
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


def out_of_time(env_id: str, budget: float, progress: LoadProgress) -> Finding:
    """The `load` finding when loading did not finish within `budget` seconds. A `load()`
    still yielding tasks at its own pace (`LoadProgress.still_yielding`) is slow, which
    breaks no contract: vfcheck could not check the env in the time given (`error`), and
    says how to give it more. One that yielded nothing, or stopped yielding, may hang or
    never end: the contract failed, naming where the load stood."""
    observed, where = progress.observed(), progress.where()
    seen = {"yielded": progress.yielded, "where": where}
    if progress.still_yielding():
        return load_finding(
            env_id, "error",
            f"env {env_id!r}: loading ran out of time — {observed}. A finite load slower "
            f"than vfcheck's {budget:g}s deadline breaks no contract, but vfcheck could not "
            "check the env: give it more time with --load-timeout S (pytest: "
            "--vf-load-timeout S; [tool.vfcheck] load_timeout = S; without it, loading gets "
            f"the longer of --timeout and {LOAD_TIMEOUT:g}s). If load() never ends, declare "
            "INFINITE = True: vfcheck then takes its first --sample tasks.",
            load=seen, ran_out=True)
    return load_finding(
        env_id, "failed",
        f"env {env_id!r}: loading did not finish within {budget:g}s: {observed}"
        + (f"; the load thread was in {where}" if where else "")
        + f" (an infinite or hanging load()?). Contract: {spec_of('load').contract}.",
        load=seen)


def infinite_sampled(finding: Finding, taskset: str, loaded: int) -> Finding:
    """The passing `load` finding of an infinite taskset that no `-n` bounds: vfcheck took
    its first `--sample` tasks, the ones the episode families play, and says so."""
    return load_finding(
        "", "passed",
        f"{finding.message}: {taskset} is infinite (INFINITE = True), so vfcheck loaded its "
        f"first {loaded}, the sample (--sample K takes more, -n N bounds the load)",
        **finding.details, infinite={"taskset": taskset, "loaded": loaded})


def script_strays(ctx: CheckContext, tasks: list[Any]) -> str:
    """`[[task]] 2 (key 'nope'), which matches none of its 3 tasks (keys ...)`: the script's
    `[[task]]` entries no loaded task matches; empty when all match, or when `num_tasks`
    cut the load short (the entry may name a task left out)."""
    script = ctx.script_file
    if script is None or ctx.num_tasks is not None:
        return ""
    from vfcheck._model import TaskRef

    strays = script.unmatched([TaskRef(t.data.idx, str(t.key)) for t in tasks])
    if not strays:
        return ""
    keys = ", ".join(repr(str(t.key)) for t in tasks[:5]) + (", ..." if len(tasks) > 5 else "")
    return (f"{' and '.join(strays)}, which match{'es' if len(strays) == 1 else ''} none of "
            f"its {len(tasks)} task(s) (indices 0-{len(tasks) - 1}, keys {keys})")


@early
async def rejected_env_args(ctx: CheckContext) -> Finding | None:
    """Why the env's config type rejects the user's env args (an unknown key, a wrong
    type), found from the config alone before anything else starts (the fresh load of
    `determinism.load`, the env's own load): a usage error in seconds. Anything else
    is left to the `load` check, which reports it."""
    from vfcheck._episodes.load_errors import rejected_args
    from vfcheck._episodes.offline import offline_env_config

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
                                       load_deadline(ctx))
    except TimeoutError:
        return None
    rejected = None if error is None else rejected_args(ctx.env_id, args, error)
    return None if rejected is None else load_finding(ctx.env_id, "error", rejected, usage=True)
