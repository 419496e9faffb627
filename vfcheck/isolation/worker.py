"""The check worker: one process per env, where verifiers is imported and env code runs.

`python -m vfcheck.isolation.worker` reads its spec (JSON) on stdin and appends events to the spec's
`events` file (see `vfcheck.isolation.events`). Env code runs here, not in the front end, so that a
hook that blocks the event loop (a sync sleep, a busy loop) or never returns can be stopped
by killing this process at a hard deadline (`vfcheck.isolation.supervisor`), and the run goes on.

`python -m vfcheck.isolation.worker --hashes` prints the `Task.hash` list of the env's tasks as one
JSON line instead (the `determinism.load` check runs it under another PYTHONHASHSEED, from
the start of the run, so that its verifiers import overlaps this worker's).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import sys
import time
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from vfcheck.checks import BY_ID, select
from vfcheck.compat import episode_hooks_missing, lacks_message
from vfcheck.episodes.offline import prepare_process_env
from vfcheck.findings import Finding, TaskId
from vfcheck.isolation.events import Unit, append_event
from vfcheck.options import CheckOptions

UNIT_CONCURRENCY = 4
"""Per-task checks (setup, gold, noop) in flight at once; the episode families share the
EpisodeLab's gate instead (most of their time is waiting: timeouts, settles)."""
LOAD_TIMEOUT = 60.0
"""Seconds `load()` may take at least (the per-check timeout when that is longer): loading
imports the env's modules, which a machine under load makes slow."""
BUDGET = {"setup": 1.5, "gold": 2.5, "noop": 2.5, "episode": 2.5, "lifecycle": 2.5,
          "determinism.replay": 4.5, "golden": 4.5, "preview": 5.5, "robustness": 4.5}
"""A unit's deadline, in multiples of the per-check timeout (plus a constant): a `gold`
unit sets the task up, then validates, each bounded by the timeout; `preview` plays three
episodes in a row."""


def unit_deadline(check: str, timeout: float) -> float:
    if check == "determinism.load":  # a fresh interpreter imports verifiers and loads
        return 2 * max(timeout, LOAD_TIMEOUT) + 10.0
    return BUDGET.get(check, 2.0) * timeout + 10.0


class Worker:
    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.env_id: str = spec["env_id"]
        self.events = Path(spec["events"])
        self.options = CheckOptions.from_dict(spec["options"])
        self.timeout: float = self.options.timeout
        self.task_of: dict[int, Any] = {}
        self.fresh_hashes: asyncio.Task[list[str]] | None = None
        """`determinism.load`'s other load, started with the worker."""
        self.identities: dict[int, tuple[str, str]] = {}
        """Each task's golden identity `(identity, source)` (`vfcheck.traces.golden`)."""
        self.container_roles: list[str] = []
        """Roles whose harness needs a container (`Harness.NEEDS_CONTAINER`): no episodes."""

    def emit(self, event: str, **data: Any) -> None:
        append_event(self.events, {"event": event, "t": time.time(), **data})

    def emit_finding(self, finding: Finding) -> None:
        self.emit("finding", finding=finding.as_dict())

    # -- load

    async def load(self) -> tuple[Any, list[Any], list[Any]] | None:
        """The env, its tasks and role tiers; None (after a failed `load` finding) if not."""
        from vfcheck.checks.load import check_keys, load_finding, no_network
        from vfcheck.episodes.runner import EnvLoadError, load_env, load_tasks

        attempts: list[str] = []

        def load_all() -> tuple[Any, list[Any], list[Any]]:
            with no_network(attempts):
                env, tiers = load_env(self.env_id, self.options.env_args,
                                      harness=self.options.harness)
                return env, tiers, load_tasks(env, self.options.num_tasks)

        budget = max(self.timeout, LOAD_TIMEOUT)
        self.emit("start", check="load", index=None, deadline=budget + 10.0)
        contract = BY_ID["load"].contract
        try:
            env, tiers, tasks = await asyncio.wait_for(asyncio.to_thread(load_all), budget)
        except TimeoutError:
            self.emit_finding(load_finding(
                self.env_id, "failed",
                f"env {self.env_id!r}: loading did not finish within {budget:g}s "
                f"(an infinite or hanging load()?). Contract: {contract}."))
            return None
        except EnvLoadError as e:
            message = str(e)
            if attempts:
                message = (f"env {self.env_id!r}: load() reached for the network "
                           f"({', '.join(sorted(set(attempts)))}); vfcheck runs offline")
            self.emit_finding(load_finding(self.env_id, "failed",
                                           f"{message}. Contract: {contract}.",
                                           network=attempts))
            return None
        except Exception as e:  # noqa: BLE001 - load() raising is the env's load finding
            message = f"{type(e).__name__}: {e}"
            if attempts:
                message = f"load() reached for the network ({', '.join(sorted(set(attempts)))})"
            self.emit_finding(load_finding(
                self.env_id, "failed",
                f"env {self.env_id!r}: {message}. Contract: {contract}.",
                network=attempts, traceback=traceback.format_exc()))
            return None
        finding = check_keys(self.env_id, tasks)
        self.emit_finding(finding)
        if finding.outcome != "passed":
            return None
        return env, tasks, tiers

    # -- the run

    def hash_spec(self) -> dict[str, Any]:
        """What the fresh interpreter of `determinism.load` needs to load the env alike."""
        return {"env_id": self.env_id, "options": self.spec["options"]}

    def start_fresh_load(self) -> asyncio.Task[list[str]] | None:
        """Start `determinism.load`'s other load now, if this run will check it."""
        from vfcheck.checks.load import FRESH_HASH_SEED, hashes_in_fresh_interpreter

        wanted = any(spec.id == "determinism.load" for spec in select(self.options.families))
        done = ["determinism.load", None] in self.spec.get("skip", [])
        if not wanted or done:
            return None
        return asyncio.ensure_future(hashes_in_fresh_interpreter(self.hash_spec(),
                                                                 FRESH_HASH_SEED))

    async def run(self) -> None:
        self.fresh_hashes = self.start_fresh_load()
        try:
            await self.run_checks()
        finally:
            if self.fresh_hashes is not None and not self.fresh_hashes.done():
                self.fresh_hashes.cancel()
                with contextlib.suppress(BaseException):
                    await self.fresh_hashes

    async def run_checks(self) -> None:
        import verifiers

        from vfcheck.episodes.runner import EnvRunner
        from vfcheck.model import ScriptedModel

        self.emit("ready", verifiers=verifiers.__version__, python=sys.version.split()[0])
        loaded = await self.load()
        if loaded is None:
            return
        env, tasks, tiers = loaded
        from vfcheck.traces.golden import task_identity

        self.task_of = {t.data.idx: t for t in tasks}
        self.identities = {t.data.idx: task_identity(t) for t in tasks}
        self.container_roles = container_roles(tiers)
        sample = [t.data.idx for t in tasks[: self.options.sample]]
        self.emit(
            "plan",
            tasks=[{"index": t.data.idx, "key": str(t.key),
                    "golden": self.identities[t.data.idx][0]} for t in tasks],
            sample=sample,
            tiers=[{"role": r.role, "tier": r.tier, "harness": r.harness, "reason": r.reason}
                   for r in tiers],
        )
        from vfcheck.checks.episodes import (
            AGENT_TIMEOUT,
            EPISODES_AT_ONCE,
            FAST_EPISODES_AT_ONCE,
            EpisodeLab,
            PolicyRouter,
        )

        router = PolicyRouter(base=self.base_policy())
        model = ScriptedModel(router, seed=self.seed())
        harness = self.options.harness
        async with contextlib.AsyncExitStack() as stack:
            runner = await stack.enter_async_context(
                EnvRunner.open(self.env_id, model=model, loaded=(env, tiers)))

            async def open_timeout_runner() -> Any:
                roles = {f"{t.role}.timeout.rollout": AGENT_TIMEOUT for t in tiers}
                return await stack.enter_async_context(EnvRunner.open(
                    self.env_id, env_args={**self.options.env_args, **roles},
                    harness=harness, model=model, start_mock=False))

            fast = all(t.tier == "fast" for t in tiers)
            lab = EpisodeLab(self.env_id, runner, router, open_timeout_runner, self.timeout,
                             at_once=FAST_EPISODES_AT_ONCE if fast else EPISODES_AT_ONCE)
            lab.goldens = self.golden_plan(tiers, verifiers.__version__)
            units = self.units(tasks, sample)
            await self.run_units(units, self.unit_runners(env, tasks, lab))

    @functools.cached_property
    def golden_book(self) -> Any:
        """The env's golden folder as this run treats it (one for `golden` and
        `golden.unused`)."""
        from vfcheck.traces.golden import GoldenBook

        options = self.options
        return GoldenBook(
            Path(options.golden_dir or "golden").resolve(), self.env_id,
            update=options.golden_update, strict=options.golden_strict,
            record=str(self.spec.get("golden_record") or ""),
            write_root=Path(options.golden_write_root),
        )

    def golden_plan(self, tiers: list[Any], verifiers_version: str) -> Any:
        from vfcheck.checks.episodes import GoldenPlan

        script = self.options.script
        header = {
            "env": self.env_id,
            "tier": {t.role: t.tier for t in tiers},
            "script": Path(script).name if script else "default",
            "seed": self.seed(),
            "verifiers": verifiers_version,
        }
        return GoldenPlan(self.golden_book, self.identities, header)

    async def golden_unused(self) -> Finding:
        """`golden.unused`: golden files of this env that name none of its tasks."""
        from vfcheck.traces.golden import env_folder, shown_path

        book = self.golden_book
        folder = shown_path(env_folder(book.golden_dir, self.env_id))
        spec = BY_ID["golden.unused"]

        def finding(outcome: Any, message: str, **details: Any) -> Finding:
            return Finding("golden.unused", spec.family, None, outcome,
                           f"env {self.env_id!r}: {message}", details)

        if self.options.num_tasks is not None:
            return finding("skipped", f"cannot tell which golden files in {folder} are unused: "
                           f"-n {self.options.num_tasks} limits the tasks loaded")
        unused = book.unused([identity for identity, _ in self.identities.values()])
        names = [shown_path(p) for p in unused]
        if not unused:
            return finding("passed", f"no unused golden file in {folder}")
        listed = ", ".join(names)
        if book.update:
            if refused := book.remove(unused):
                return finding("error", refused, unused=names)
            return finding("passed", f"removed {len(unused)} unused golden file(s): {listed}",
                           removed=names)
        if book.strict:
            return finding("failed", f"golden.unused failed — {len(unused)} golden file(s) "
                           f"name no task of the env: {listed} (remove them with: "
                           f"{book.record}). Contract: {spec.contract}.", unused=names)
        return finding("skipped", f"{len(unused)} unused golden file(s), naming no task of "
                       f"the env: {listed} (remove them with: {book.record})", unused=names)

    def seed(self) -> int:
        return self.options.seed if self.options.seed is not None else 0

    def base_policy(self) -> Any:
        script = self.options.script
        if not script:
            return None
        from vfcheck.script import Script

        return Script.load(Path(script)).policy(self.options.seed)

    def units(self, tasks: list[Any], sample: list[int]) -> list[Unit]:
        # `hygiene.processes` runs after the runners close (`processes`), not as a unit
        wanted = [spec for spec in select(self.options.families)
                  if spec.id not in ("load", "hygiene.processes")]
        units: list[Unit] = []
        for spec in wanted:
            if spec.scope == "env":
                units.append((spec.id, None))
            else:
                indices = [t.data.idx for t in tasks] if spec.scope == "task" else sample
                units += [(spec.id, i) for i in indices]
        skip = {(c, i) for c, i in self.spec.get("skip", [])}
        return [u for u in units if u not in skip]

    def unit_runners(self, env: Any, tasks: list[Any],
                     lab: Any) -> dict[str, Callable[[Any], Awaitable[Finding]]]:
        from vfcheck.checks.load import check_determinism_load, task_hashes
        from vfcheck.checks.validate import check_task, validate_config

        config = validate_config(env, self.timeout)

        async def determinism_load(_: Any) -> Finding:
            fresh = self.fresh_hashes or self.start_fresh_load()
            assert fresh is not None
            return await check_determinism_load(self.env_id, fresh, task_hashes(tasks))

        return {
            "determinism.load": determinism_load,
            "setup": lambda task: check_task(self.env_id, task, "setup", config),
            "gold": lambda task: check_task(self.env_id, task, "gold", config),
            "noop": lambda task: check_task(self.env_id, task, "noop", config),
            "episode": lab.episode,
            "lifecycle": lab.lifecycle,
            "preview": lab.preview,
            "robustness": lab.robustness,
            "determinism.replay": lab.replay,
            "golden": lab.golden,
            "golden.unused": lambda _: self.golden_unused(),
        }

    async def run_units(self, units: list[Unit],
                        runners: dict[str, Callable[[Any], Awaitable[Finding]]]) -> None:
        """Suspects of an earlier stall first, one at a time; then every `setup` (and the
        env-level checks); then the rest, whose task's setup did not fail (those are skipped
        as blocked: verifiers runs `Task.setup` before every check and episode, so they
        would fail for the same cause)."""
        isolate = {(c, i) for c, i in self.spec.get("isolate", [])}
        setup_failed = set(self.spec.get("setup_failed", []))
        gate = asyncio.Semaphore(UNIT_CONCURRENCY)

        async def one(unit: Unit) -> None:
            check, index = unit
            task = self.task_of.get(index) if index is not None else None
            skip_reason = self.skip_reason(check, task)
            if skip_reason is not None:
                self.emit_finding(Finding(
                    check, BY_ID[check].family,
                    TaskId(task.data.idx, str(task.key)) if task is not None else None,
                    "skipped", skip_reason, {}))
                return
            if task is not None and index in setup_failed and check != "setup":
                self.emit_finding(Finding(
                    check, BY_ID[check].family, TaskId(task.data.idx, str(task.key)), "skipped",
                    f"env {self.env_id!r}, task {index} ({task.key}): blocked — Task.setup "
                    f"failed on this task (see setup[{index}])", {}))
                return
            deadline = unit_deadline(check, self.timeout)
            self.emit("start", check=check, index=index, deadline=deadline)
            try:
                finding = await asyncio.wait_for(runners[check](task), deadline)
            except TimeoutError:
                finding = self.timed_out(check, task, deadline)
            except Exception as e:  # noqa: BLE001 - vfcheck's own failure: an `error` finding
                finding = Finding(
                    check, BY_ID[check].family,
                    TaskId(task.data.idx, str(task.key)) if task is not None else None,
                    "error", f"vfcheck could not run {check}: {type(e).__name__}: {e}",
                    {"traceback": traceback.format_exc()})
            if check == "setup" and finding.outcome in ("failed", "error"):
                setup_failed.add(index)
            self.emit_finding(finding)

        async def gated(unit: Unit) -> None:
            if BY_ID[unit[0]].scope != "task":  # episodes are gated by the EpisodeLab
                await one(unit)
                return
            async with gate:
                await one(unit)

        for unit in [u for u in units if u in isolate]:
            await one(unit)
        rest = [u for u in units if u not in isolate]
        # env-level checks need no setup: they go with the first batch, so that a hanging
        # setup does not hold up their verdicts (nor the pytest items that wait for them)
        first = [u for u in rest if u[0] == "setup" or u[1] is None]
        await asyncio.gather(*(gated(u) for u in first))
        await asyncio.gather(*(gated(u) for u in rest if u not in first))

    def skip_reason(self, check: str, task: Any) -> str | None:
        """Why vfcheck cannot run `check` on `task` offline, if it cannot."""
        from vfcheck.checks.validate import needs_container

        if task is None:
            return None
        where = f"env {self.env_id!r}, task {task.data.idx} ({task.key})"
        if BY_ID[check].scope == "sample" and episode_hooks_missing():
            return (f"{where}: {lacks_message(episode_hooks_missing())}, which the episode "
                    "checks need")
        if BY_ID[check].scope == "sample" and self.container_roles:
            return (f"{where}: {'; '.join(self.container_roles)} — vfcheck plays episodes "
                    "offline in the subprocess runtime")
        if BY_ID[check].scope == "sample" and needs_container(task):
            return (f"{where}: needs a container runtime (NEEDS_CONTAINER, TaskData.image or "
                    "TaskData.agent_user); vfcheck runs offline in the subprocess runtime")
        return None

    async def processes(self) -> None:
        """`hygiene.processes`, once every unit is done and the runners are closed (see
        `vfcheck.checks.hygiene`); not after a failed load, which ran no hook."""
        from vfcheck.checks import hygiene

        skip = {(c, i) for c, i in self.spec.get("skip", [])}
        wanted = any(spec.id == hygiene.CHECK for spec in select(self.options.families))
        if not self.task_of or not wanted or (hygiene.CHECK, None) in skip:
            return
        self.emit("start", check=hygiene.CHECK, index=None, deadline=hygiene.SETTLE + 10.0)
        found = await hygiene.settled_leftovers(os.getpid())
        hygiene.stop(found)
        self.emit_finding(hygiene.processes_finding(self.env_id, found))

    def timed_out(self, check: str, task: Any, deadline: float) -> Finding:
        tid = TaskId(task.data.idx, str(task.key)) if task is not None else None
        where = f"env {self.env_id!r}" + (f", {tid.label()}" if tid else "")
        return Finding(
            check, BY_ID[check].family, tid, "failed",
            f"{where}: {check} did not finish within {deadline:g}s (timeout {self.timeout:g}s "
            f"per step). Contract: {BY_ID[check].contract}.", {"deadline": deadline})


def container_roles(tiers: list[Any]) -> list[str]:
    from verifiers.v1.utils.loaders import harness_class

    found = []
    for tier in tiers:
        try:
            needs = bool(harness_class(tier.harness).NEEDS_CONTAINER)
        except Exception:  # noqa: BLE001 - an unloadable harness fails the episodes instead
            needs = False
        if needs:
            found.append(f"role {tier.role!r} harness {tier.harness!r} needs a container "
                         "runtime (NEEDS_CONTAINER)")
    return found


async def main_async(spec: dict[str, Any]) -> None:
    worker = Worker(spec)
    worker.emit("hello", pid=os.getpid())
    prepare_process_env(worker.options.paths, wheels=worker.options.wheels)
    from vfcheck.checks import hygiene

    hygiene.become_subreaper()  # orphans of env code stay below the worker, in view
    try:
        await worker.run()
        await worker.processes()
    finally:
        hygiene.stop(hygiene.leftovers(os.getpid()))  # never leave env processes behind
        worker.emit("done")


def print_hashes(spec: dict[str, Any]) -> None:
    """The `--hashes` mode: this interpreter's load, as `Task.hash` per task."""
    from vfcheck.checks.load import no_network, task_hashes
    from vfcheck.episodes.runner import load_env, load_tasks

    options = CheckOptions.from_dict(spec["options"])
    prepare_process_env(options.paths)
    with no_network([]):
        env, _ = load_env(spec["env_id"], options.env_args, harness=options.harness)
        tasks = load_tasks(env, options.num_tasks)
    print(json.dumps(task_hashes(tasks)))


def main() -> None:
    spec = json.loads(sys.stdin.read())
    from vfcheck.isolation.workdirs import owned

    with owned():  # HOME: a work dir of this worker's own, before verifiers is imported
        if "--hashes" in sys.argv[1:]:
            print_hashes(spec)
            return
        asyncio.run(main_async(spec))
    sys.stdout.flush()
    # Harness programs and tool servers are children of this process's runtimes, which
    # verifiers stops on exit; a lingering non-daemon thread of env code must not keep
    # the worker alive past its findings.
    os._exit(0)


if __name__ == "__main__":
    main()
