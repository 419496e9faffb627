"""The check worker: one process per env, where verifiers is imported and env code runs.

`python -m vfcheck._isolation.worker` reads its spec (JSON) on stdin and appends events to the
spec's `events` file (see `vfcheck._isolation.events`). Env code runs here, not in the front end, so
that a hook that blocks the event loop (a sync sleep, a busy loop) or never returns can be stopped
by killing this process at a hard deadline (`vfcheck._isolation.supervisor`), and the run goes on.

A watchdog (`vfcheck._isolation.watchdog`) names the hook when a unit stalls the worker (a
blocked event loop, a swallowed cancellation) in a `stalled` event, for the supervisor to
kill on. A restarted worker gets the spec's `blocked` list, what earlier stalls blocked,
`{"index", "stage", "by", "what"}`, and fails without running them the units of that task
whose check runs that stage (`CheckSpec.stages`): verifiers would run the same hook again.

A unit that failed after one of its deadlines fired is not reported at once: it is held
back (a `deferred` event) and run again once the rest is done, alone on the run's floor
(`confirm`, `vfcheck._host.attempts`); its spec's `capacity` sizes the episode gates.

With `plan_only` in its spec the worker stops once it has announced the plan (the xdist
controller's: it needs every env's items, its workers check the envs).

`python -m vfcheck._isolation.worker --NAME` runs the worker mode a family declared instead
(`vfcheck.checks._registry.worker_mode`: `--hashes` is `determinism.load`'s second load).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from vfcheck._episodes.offline import prepare_process_env
from vfcheck._host.attempts import (
    CURRENT_ATTEMPT,
    KILLED,
    Attempt,
    confirmed,
    needs_confirming,
)
from vfcheck._host.child_sockets import child_log_of, guard_children, guarded_environ
from vfcheck._host.crash_site import CRASH_SITES
from vfcheck._host.env_code import aborted_by
from vfcheck._host.files_left import FILE_WRITES, private_tempdir
from vfcheck._host.floor import FLOOR
from vfcheck._host.leftovers import leftovers, stop
from vfcheck._host.library_import import import_verifiers
from vfcheck._host.offline_sockets import OFFLINE_SOCKETS, no_network
from vfcheck._host.port_files import PORT_FILES
from vfcheck._host.processes import become_subreaper
from vfcheck._host.queue_clock import QUEUE_CLOCK
from vfcheck._host.warm_starts import NO_TOOL_SERVERS, WARM
from vfcheck._isolation.events import Stall, Unit, append_event
from vfcheck._isolation.watchdog import CURRENT_UNIT, Watchdog, env_modules
from vfcheck._options.allow import apply_allow
from vfcheck._options.resolved import CheckOptions
from vfcheck._shared.findings import Finding
from vfcheck.checks import REGISTRY
from vfcheck.checks._context import CheckContext, task_id
from vfcheck.checks._lab import episode_lab
from vfcheck.checks._registry import CheckSpec

KILL_WAIT = 30.0
"""Seconds a unit gets to end once its deadline cancelled it. One that swallows the
cancellation is reported by the watchdog within `CANCEL_GRACE` and killed by the
supervisor; past this, the worker goes on as if it had ended (vfcheck's own code stuck)."""
QUEUED_EVERY = 1.0
"""Seconds between two `queued` events while episodes wait at the gate: the supervisor's
hard deadlines move by what they say (`vfcheck._host.queue_clock`)."""
UNIT_CONCURRENCY = 4
"""Task-scoped checks (setup, gold, noop) in flight at once; the episode-playing checks share
the episode lab's gate instead (most of their time is waiting: timeouts, settles)."""


class Worker:
    """Runs the registered checks of one env: the `gate` phase, then the `run` and `last`
    phases with the runners open, then the `after` phase once they are closed. It names no
    family."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.env_id: str = spec["env_id"]
        self.events = Path(spec["events"])
        self.ctx = CheckContext(self.env_id, spec, CheckOptions.from_dict(spec["options"]))
        self.selected = REGISTRY.select(self.ctx.options.families)
        self.watchdog = Watchdog(self.emit_stall, self.ctx.timeout)
        self.blocked: list[dict[str, Any]] = list(spec.get("blocked") or [])
        """What stalls of earlier workers blocked (see the module docstring)."""
        self.suspects: list[tuple[CheckSpec, Any, Finding, Attempt]] = []
        """Units whose failure a deadline may have decided, with that first finding: they
        run again alone before anything is reported (`confirm`)."""
        self.emitted: dict[Unit, Finding] = {}

    def emit(self, event: str, **data: Any) -> None:
        append_event(self.events, {"event": event, "t": time.time(), **data})

    def emit_finding(self, finding: Finding) -> None:
        """Emit `finding`, as `expected` when the user allowed it (`vfcheck._options.allow`)."""
        unit = (finding.check, finding.task.index if finding.task else None)
        self.emitted[unit] = finding
        self.ctx.outcomes[unit] = finding.outcome
        finding = apply_allow(self.env_id, finding, self.ctx.options.allow)
        self.emit("finding", finding=finding.as_dict())

    def emit_stall(self, stall: Stall) -> None:
        append_event(self.events, stall.as_event())

    def phase(self, name: str) -> list[CheckSpec]:
        return [spec for spec in self.selected if spec.phase == name]

    def units(self, phase: str) -> list[Unit]:
        """This run's units of `phase` that have no finding yet (`skip`)."""
        ctx = self.ctx
        wanted = {spec.id for spec in self.phase(phase)}
        units = REGISTRY.units(ctx.options.families, [t.data.idx for t in ctx.tasks],
                               ctx.sample)
        return [u for u in units if u[0] in wanted and u not in ctx.skip]

    async def prepare(self) -> None:
        """Each selected check's `prepare`, awaiting what it returns (that its work started:
        the import that may follow holds the event loop)."""
        for spec in self.selected:
            if spec.prepare is not None and (spec.id, None) not in self.ctx.skip \
                    and (started := spec.prepare(self.ctx)) is not None:
                await started
        self.emit("prepared")

    async def run(self) -> None:
        import verifiers

        ctx = self.ctx
        plan_only = bool(self.spec.get("plan_only"))
        # The core the import leaves idle takes one helper interpreter: the warm one if the
        # hint started it (a tool env's episodes wait for it), else the prepares' (measured:
        # three at once made echo-tool-v1's check ~0.8 s slower)
        prepare_first = not plan_only and WARM.zygote is None
        async with ctx:  # its exit cancels what a prepare started
            if prepare_first:
                await self.prepare()
            with contextlib.suppress(ImportError):  # an older verifiers: the load says so
                import_verifiers()  # the collector paused: ~1 s of CPU less (see its module)
            self.emit("imported")
            for early in REGISTRY.early:  # a usage error found before anything starts
                if (finding := await early(ctx)) is not None:
                    self.emit("ready", verifiers=verifiers.__version__,
                              python=sys.version.split()[0])
                    self.emit_finding(finding)
                    return
            if not plan_only and not prepare_first:
                await self.prepare()
            ctx.verifiers_version = verifiers.__version__
            self.emit("ready", verifiers=verifiers.__version__, python=sys.version.split()[0])
            for spec in self.phase("gate"):
                async with FLOOR.shared():
                    finding = await self.run_unit(spec, None)
                if finding is None:  # nothing else runs here yet: confirm it now
                    await self.confirm()
                    finding = self.emitted.get((spec.id, None))
                if finding is None or finding.outcome != "passed" or not ctx.loaded:
                    return
            self.watchdog.know_env(env_modules(ctx))
            self.emit(
                "plan",
                tasks=[{"index": t.data.idx, "key": str(t.key)} for t in ctx.tasks],
                sample=ctx.sample,
                tiers=[{"role": r.role, "tier": r.tier, "harness": r.harness,
                        "reason": r.reason} for r in ctx.tiers],
            )
            if plan_only:  # the xdist controller's: its workers run the checks
                return
            gc.freeze()  # what loading left (verifiers, the env, their imports) is never
            # scanned again by the collections every episode's garbage triggers
            self.start_warm_starts()
            queueing = asyncio.ensure_future(self.report_queueing())
            OFFLINE_SOCKETS.env_code, OFFLINE_SOCKETS.kinds = (self.watchdog.env_code,
                                                               self.watchdog.kinds)
            CRASH_SITES.know(self.watchdog.env_code, self.watchdog.kinds)
            FILE_WRITES.watch(CURRENT_UNIT.get)  # what env code creates (`hygiene.files`)
            guard_children(child_log_of(self.events))  # tool servers start from here on
            try:
                with no_network(OFFLINE_SOCKETS.record):  # httpx ends in the mock's router
                    # the mock answers model (and judge) calls of every check; if the lab
                    # cannot open (a harness program that cannot be prepared offline), each
                    # check that plays an episode gets an `error` finding saying why, and
                    # the others still run
                    with contextlib.suppress(Exception):
                        await episode_lab(ctx)
                    await self.run_units(self.units("run"))
                    await self.run_units(self.units("last"))
            finally:
                queueing.cancel()
        FILE_WRITES.stop()
        self.end_warm_starts()  # before `hygiene.processes` looks below the worker
        for unit in [] if plan_only else self.units("after"):  # verifiers closed its runners
            await self.run_unit(REGISTRY[unit[0]], None)

    def start_warm_starts_on_hint(self) -> None:
        """Before the load: start the warm interpreter if the env's source names a toolset
        (`vfcheck._shared.env_ids.mentions`, a hint), so that it imports while the worker loads, on
        the core the load leaves idle; `start_warm_starts` decides once the env is loaded."""
        from vfcheck._shared.env_ids import mentions

        if not self.ctx.options.cold_starts and mentions(self.env_id, self.ctx.options.paths,
                                                         "toolset"):
            WARM.start(guarded_environ(os.environ, child_log_of(self.events)))

    def start_warm_starts(self) -> None:
        """Start the warm interpreter if the env has tool servers (a chat env forks nothing:
        it would only pay for the imports), with the environment they will get once
        `guard_children` ran; stop one the hint started for an env without tool servers."""
        from vfcheck._episodes.warm_scope import settle_tool_zygote

        if not self.ctx.options.cold_starts:
            settle_tool_zygote(self.ctx.env, guarded_environ(os.environ, child_log_of(self.events)),
                               unsure=any(t.tools for t in self.ctx.tiers))

    def end_warm_starts(self) -> None:
        """Stop the warm interpreter, remove the port files verifiers left for this worker's
        tool servers (`vfcheck._host.port_files`), and say how its processes started and
        which port files went (a `starts` event: `vfcheck._host.warm_starts`)."""
        WARM.close()
        removed = PORT_FILES.remove()  # verifiers' own, of this worker's tool servers only
        if WARM.counts or removed:
            self.emit("starts", **WARM.summary(), port_files=removed)
        WARM.reset()

    async def run_unit(self, spec: CheckSpec, task: Any, *,
                       alone: bool = False) -> Finding | None:
        """Run one unit to its finding, bounded by its deadline, and emit it; or, when a
        deadline may have decided a failure, keep it to be run again alone (`confirm`) and
        return None. `alone`: this run already is that (`isolate`): its verdict stands."""
        finding, attempt = await self.attempt(spec, task, alone=alone)
        if alone:
            finding = confirmed(None, [KILLED], finding, attempt.deadlines)
        elif needs_confirming(finding, attempt):
            self.suspects.append((spec, task, finding, attempt))
            self.emit("deferred", check=spec.id, index=None if task is None else task.data.idx,
                      deadlines=attempt.deadlines)
            return None
        self.emit_finding(finding)
        return finding

    async def attempt(self, spec: CheckSpec, task: Any,
                      alone: bool = False) -> tuple[Finding, Attempt]:
        """One run of one unit, bounded by its deadline: its finding, and the deadlines its
        work hit (`vfcheck._host.attempts`)."""
        deadline = spec.deadline(self.ctx.timeout, self.ctx.options.load_timeout)
        unit = (spec.id, None if task is None else task.data.idx)
        self.emit("start", check=spec.id, index=unit[1], deadline=deadline)
        attempt = Attempt(alone=alone)
        tokens = CURRENT_UNIT.set(unit), CURRENT_ATTEMPT.set(attempt)  # the tasks it starts
        try:  # inherit both: the watchdog's task factory reads the unit
            job = asyncio.ensure_future(spec.run(self.ctx, task))
        finally:
            CURRENT_UNIT.reset(tokens[0])
            CURRENT_ATTEMPT.reset(tokens[1])
        try:
            finding = await self.finish(job, spec, task, deadline, attempt)
        except asyncio.CancelledError:
            job.cancel()
            raise
        except Exception as e:  # noqa: BLE001 - vfcheck's own failure: an `error` finding
            finding = Finding(
                spec.id, spec.family, task_id(task) if task is not None else None, "error",
                f"vfcheck could not run {spec.id}: {type(e).__name__}: {e}",
                {"traceback": "".join(traceback.format_exception(e))})
        return finding, attempt

    async def confirm(self) -> None:
        """Run each unit a deadline failed again, alone (`vfcheck._host.attempts`): once
        the rest of the run is done here, one at a time, holding the run's floor alone (the
        other workers pause). A task's plays are played anew, once, and shared by its
        checks run again; a task whose setup timed out twice blocks its other checks, as a
        failed setup does."""
        order = {spec.id: i for i, spec in enumerate(REGISTRY)}
        suspects = sorted(self.suspects, key=lambda s: (
            -1 if s[1] is None else s[1].data.idx, order.get(s[0].id, 99)))
        self.suspects = []
        forgotten: set[int | None] = set()
        setup_failed: set[int] = set()
        for spec, task, first, first_attempt in suspects:
            index = None if task is None else task.data.idx
            if index in setup_failed and spec.blocked_by_setup:
                self.emit_finding(self.ctx.finding(
                    spec.id, task, "skipped", f"blocked — Task.setup failed on this task (see "
                    f"setup[{index}])"))
                continue
            if index not in forgotten:
                self.ctx.forget(index)
                forgotten.add(index)
            async with FLOOR.alone():
                second, attempt = await self.attempt(spec, task, alone=True)
            finding = confirmed(first, first_attempt.deadlines, second, attempt.deadlines)
            self.emit_finding(finding)
            if index is not None and not spec.blocked_by_setup and finding.bad:
                setup_failed.add(index)

    async def finish(self, job: asyncio.Future[Finding], spec: CheckSpec, task: Any,
                     deadline: float, attempt: Attempt | None = None) -> Finding:
        """`job`'s finding within `deadline`, not counting the time episodes waited for a
        slot (`QUEUE_CLOCK`); else cancel it, and give it `KILL_WAIT` to end
        (`asyncio.wait_for` would wait forever for env code that swallows the
        `CancelledError`: the watchdog reports that, and the supervisor kills the worker)."""
        started, queued = time.monotonic(), QUEUE_CLOCK.waited()
        while (left := deadline + QUEUE_CLOCK.waited() - queued
               - (time.monotonic() - started)) > 0:
            await asyncio.wait({job}, timeout=left)
            if job.done():
                return job.result()
        job.cancel()
        await asyncio.wait({job}, timeout=KILL_WAIT)
        if attempt is not None:
            attempt.deadlines.append(f"{spec.id} did not finish within {deadline:g}s")
        return self.timed_out(spec, task, deadline, QUEUE_CLOCK.waited() - queued)

    async def report_queueing(self) -> None:
        """Append a `queued` event whenever the gate's waits have grown (`QUEUED_EVERY`)."""
        said = 0.0
        while True:
            await asyncio.sleep(QUEUED_EVERY)
            if (waited := QUEUE_CLOCK.waited()) > said + 0.01:  # not a free slot's microseconds
                self.emit("queued", seconds=round(waited, 3))
                said = waited

    async def run_units(self, units: list[Unit]) -> None:
        """Suspects of an earlier stall first, one at a time; then every env-level check (in
        the background) and every check that decides what blocks (`setup`); then the rest,
        whose task's setup did not fail (those are skipped as blocked: verifiers runs
        `Task.setup` before every check and episode, so they would fail for the same
        cause)."""
        ctx = self.ctx
        isolate = {(c, i) for c, i in self.spec.get("isolate", [])}
        setup_failed = set(self.spec.get("setup_failed", []))
        gate = asyncio.Semaphore(UNIT_CONCURRENCY)

        async def one(unit: Unit) -> None:
            spec = REGISTRY[unit[0]]
            task = ctx.task_of.get(unit[1]) if unit[1] is not None else None
            if task is not None and (reason := self.skip_reason(spec, task)) is not None:
                self.emit_finding(ctx.finding(spec.id, task, "skipped", reason))
                return
            if task is not None and spec.blocked_by_setup and unit[1] in setup_failed:
                self.emit_finding(ctx.finding(
                    spec.id, task, "skipped", f"blocked — Task.setup failed on this task (see "
                    f"setup[{unit[1]}])"))
                return
            if task is not None and (block := self.blocked_by(spec, unit[1])) is not None:
                self.emit_finding(ctx.finding(
                    spec.id, task, "failed", f"blocked — see {block['by']}: {block['what']}; "
                    f"{spec.id} runs the task's {block.get('stage') or 'env code'} too, so "
                    "vfcheck did not run it again"))
                return
            if unit in isolate:  # killed at its hard deadline once: alone now
                async with FLOOR.alone():
                    finding = await self.run_unit(spec, task, alone=True)
            elif spec.scope == "task":  # the episode-playing checks are gated by the lab
                async with gate, FLOOR.shared():
                    finding = await self.run_unit(spec, task)
            else:
                finding = await self.run_unit(spec, task)
            if not spec.blocked_by_setup and task is not None and finding is not None \
                    and finding.bad:
                setup_failed.add(unit[1])

        for unit in [u for u in units if u in isolate]:
            await one(unit)
        rest = [u for u in units if u not in isolate]
        # env-level checks need no setup: they start at once, so that a hanging setup does
        # not hold up their verdicts (nor the pytest items that wait for them), and nothing
        # waits for them (`determinism.load` waits for a second interpreter's load)
        env_level = [asyncio.ensure_future(one(u)) for u in rest if u[1] is None]
        first = [u for u in rest if u[1] is not None and not REGISTRY[u[0]].blocked_by_setup]
        try:
            await asyncio.gather(*(one(u) for u in first))
            await asyncio.gather(*(one(u) for u in rest if u[1] is not None and u not in first))
            await asyncio.gather(*env_level)
        finally:
            for job in env_level:
                job.cancel()
        await self.confirm()  # nothing else runs here any more

    def blocked_by(self, spec: CheckSpec, index: int | None) -> dict[str, Any] | None:
        """The earlier stall that blocks `spec` on task `index`: same task, and the check
        runs the stalled stage (an unknown stage blocks every check that runs env code)."""
        for block in self.blocked:
            stage = block.get("stage")
            if block["index"] == index and spec.stages and (stage is None
                                                            or stage in spec.stages):
                return block
        return None

    def skip_reason(self, spec: CheckSpec, task: Any) -> str | None:
        """Why vfcheck cannot run `spec` on `task` offline, if it cannot."""
        if spec.scope != "sample":
            return None
        from vfcheck.checks._lab import episode_skip_reason

        return episode_skip_reason(self.ctx, task)

    def timed_out(self, spec: CheckSpec, task: Any, deadline: float,
                  queued: float = 0.0) -> Finding:
        waits = f", plus {queued:.0f}s while episodes waited for a slot" if queued >= 1 else ""
        return Finding(
            spec.id, spec.family, task_id(task) if task is not None else None, "failed",
            f"{self.ctx.where(task)}: {spec.id} did not finish within {deadline:g}s (timeout "
            f"{self.ctx.timeout:g}s per step{waits}). Contract: {spec.contract}.",
            {"deadline": deadline, "queued": round(queued, 3)})


async def main_async(spec: dict[str, Any]) -> None:
    import psutil

    worker = Worker(spec)  # `spawned`: when this process began, before its imports
    worker.emit("hello", pid=os.getpid(), spawned=psutil.Process().create_time())
    FLOOR.open(worker.events.parent)  # the run dir: the run's workers share it
    worker.watchdog.install()
    prepare_process_env(worker.ctx.options.paths, wheels=worker.ctx.options.wheels)
    become_subreaper()  # orphans of env code stay below the worker, in view
    WARM.off("warm starts are off (--cold-starts)" if worker.ctx.options.cold_starts
             else NO_TOOL_SERVERS)  # until `start_warm_starts`
    if not worker.ctx.options.cold_starts:
        WARM.allow_scripts()  # harness programs: a zygote each, at their first start
    if not worker.spec.get("plan_only"):
        worker.start_warm_starts_on_hint()
    try:
        await worker.run()
    finally:
        worker.end_warm_starts()
        worker.watchdog.close()
        stop(leftovers(os.getpid()))  # never leave env processes behind
        PORT_FILES.remove()  # verifiers' own, of this worker's tool servers only
        worker.emit("done")


def main() -> None:
    spec = json.loads(sys.stdin.read())
    from vfcheck._isolation.workdirs import owned

    # HOME and TMPDIR: a work dir of this worker's own, before verifiers is imported
    with owned() as workdir, private_tempdir(workdir):
        modes = [REGISTRY.modes[a[2:]] for a in sys.argv[1:] if a[2:] in REGISTRY.modes]
        if modes:  # a family's other job (`worker_mode`): a second interpreter's load
            modes[0](spec)
            return
        try:
            asyncio.run(main_async(spec))
        except Exception:
            raise  # vfcheck's own failure: its traceback, and the supervisor restarts it
        except BaseException as e:  # noqa: BLE001 - env code's sys.exit() ended the loop
            append_event(Path(spec["events"]), {"event": "crash", "t": time.time(),
                                                "error": aborted_by(e)})
            sys.stdout.flush()
            os._exit(3)
    sys.stdout.flush()
    # Harness programs and tool servers are children of this process's runtimes, which
    # verifiers stops on exit; a lingering non-daemon thread of env code must not keep
    # the worker alive past its findings.
    os._exit(0)


if __name__ == "__main__":
    main()
