"""Run one env's checks in a worker process and hold it to hard deadlines.

The worker bounds every check with asyncio deadlines; that cannot stop a hook that blocks
the event loop (a sync sleep, a busy loop) or one that swallows `CancelledError`. So the
supervisor, in the front end's process, watches the event log and kills the worker, with
its process tree, when

- the worker's watchdog reports a `stalled` unit (`vfcheck._isolation.watchdog`: the hook,
  and the file and line where env code is stuck). That unit fails, naming them; the
  restarted worker is told the task and stage that are blocked, and fails the task's
  other checks that run that stage as `blocked — see gold[2]: ...` without running them;
  the units of other tasks that were in flight are simply run again. Which checks run
  which stage is each check's `CheckSpec.stages`:
  - a hook blocking in **setup** hits every check of the task (verifiers runs
    `Task.setup` before every check and episode); when the `setup` check is the one
    that stalled, the task's checks are skipped as blocked by its failure, as for any
    failed setup;
  - in **scoring** (`@vf.reward`, `@vf.metric`, a judge): `gold` (Task.validate scores
    its reference), `noop` and every episode-playing check;
  - in **finalize**: `noop` and the episode checks; in **validate** (Task.validate's own
    code): `gold` only; in the **episode** (`@vf.stop`, `@vf.intercept`, a tool, the
    harness): the episode checks;
  - where no hook frame is found: every check of the task that runs env code.
  A stall the watchdog names costs one restart and is not counted against `MAX_RESTARTS`
  (it always settles a unit, so the run progresses);
- a unit outlives its deadline (plus grace) with no stall named (a C call holding the
  GIL, vfcheck's own code). The units in flight run again, one at a time, alone on the
  run's floor (`vfcheck._host.floor`): a deadline the machine's load decided must not
  fail a check, and a second death names the culprit. One that dies again fails ("did not
  finish ... twice, the second time alone").

The worker is then restarted for the units without a finding. The supervisor writes what
it concludes to the same event log, so every reader sees one story.

Nothing here imports verifiers: the front ends stay light.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from vfcheck._host.processes import WORKER_HASH_SEED, kill_tree
from vfcheck._isolation.events import EventLog, Stall, Unit, append_event
from vfcheck._options.resolved import CheckOptions
from vfcheck._shared.findings import EnvReport, Finding, TaskId
from vfcheck.checks import BY_ID, REGISTRY

GRACE = 5.0
"""Seconds past a unit's own deadline before the worker is killed."""
IMPORT_DEADLINE = 180.0
"""Seconds for the worker to start and import verifiers."""
EXIT_GRACE = 5.0
"""Seconds a worker may linger after `done` (threads of env code) before it is killed."""
MAX_RESTARTS = 5
"""Worker deaths no watchdog explained before the supervisor gives up (`error` findings)."""


def event_file(run_dir: Path, env_id: str, options: CheckOptions) -> Path:
    """One file per (env, options), named so that readers in other processes find it."""
    digest = hashlib.sha256(
        json.dumps([env_id, options.as_dict()], sort_keys=True, default=str).encode()
    ).hexdigest()[:10]
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in env_id)
    return run_dir / f"{safe}-{digest}.jsonl"


def expected_units(plan: dict[str, Any], families: list[str] | None) -> list[Unit]:
    """Every unit of the run the worker's `plan` announced (`REGISTRY.units`)."""
    return REGISTRY.units(families, [t["index"] for t in plan["tasks"]], plan["sample"])


class EnvCheck:
    """One env's check run: `start()` it, then read `log` (or `report()` when `final`)."""

    def __init__(self, env_id: str, options: CheckOptions, run_dir: Path, *,
                 slots: threading.Semaphore, pytest: bool = False,
                 plan_only: bool = False, capacity: dict[str, Any] | None = None) -> None:
        self.env_id = env_id
        self.plan_only = plan_only
        """The worker loads the env, announces its plan and stops (`vfcheck._isolation.worker`)."""
        self.options = options
        self.slots = slots
        """Env workers running at once in the front end (`vfcheck._isolation.capacity`):
        the other envs' checks queue."""
        self.capacity = capacity or {}
        """The run's share of the machine, for the worker (`Capacity.for_worker`)."""
        self.pytest = pytest
        """Which front end asked (the worker's messages name its commands)."""
        self.path = event_file(run_dir, env_id, options)
        self.log = EventLog(self.path)
        self._proc: subprocess.Popen[bytes] | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.blocked: list[dict[str, Any]] = []
        """What stalls blocked, for the next worker (`vfcheck._isolation.worker`)."""
        self.crashes: dict[Unit, str] = {}
        """Units in flight when env code's `BaseException` ended the last worker, and what it
        was."""

    # -- supervising (the owner's side)

    def start(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_bytes(b"")
        self._thread = threading.Thread(target=self._supervise, name=f"vfcheck:{self.env_id}",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Kill the worker now (interrupt); what was found stays in the log."""
        self._stop.set()
        if self._proc is not None and self._proc.poll() is None:
            kill_tree(self._proc)
        if self._thread is not None:
            self._thread.join(timeout=15)

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def _spec(self, skip: set[Unit], isolate: set[Unit]) -> dict[str, Any]:
        """The worker's JSON spec: the options as resolved, plus this run's state."""
        return {
            "env_id": self.env_id, "events": str(self.path), "options": self.options.as_dict(),
            "front_end": "pytest" if self.pytest else "cli",
            "skip": sorted(skip, key=str), "isolate": sorted(isolate, key=str),
            "blocked": self.blocked, "plan_only": self.plan_only, "capacity": self.capacity,
            "setup_failed": sorted(
                i for (check, i), f in self.log.findings.items()
                if i is not None and f.bad and check in REGISTRY
                and not REGISTRY[check].blocked_by_setup),
        }

    def _emit(self, event: str, **data: Any) -> None:
        try:
            append_event(self.path, {"event": event, "t": time.time(), **data})
        except FileNotFoundError:
            if not self._stop.is_set():
                raise
            # stopped (a second Ctrl-C), and this thread outlived `stop`'s wait on a busy
            # machine: the front end wrote its reports and removed the run dir, so nobody
            # reads this log any more

    def _settle(self, unit: Unit, outcome: str, message: str, **details: Any) -> None:
        """Write a finding the worker could not: `message` follows `env '...', task ...: `."""
        check, index = unit
        task = None
        if index is not None and self.log.plan is not None:
            key = next((t["key"] for t in self.log.plan["tasks"] if t["index"] == index), "?")
            task = TaskId(index, key)
        where = f"env {self.env_id!r}" + (f", {task.label()}" if task is not None else "")
        finding = Finding(check, BY_ID[check].family, task, outcome,  # type: ignore[arg-type]
                          f"{where}: {message}", details)
        self._emit("finding", finding=finding.as_dict(), by="supervisor")

    def _supervise(self) -> None:
        isolate: set[Unit] = set()
        slot = False
        try:
            while not (slot := self.slots.acquire(timeout=0.2)):
                if self._stop.is_set():
                    return
            deaths = 0
            while deaths <= MAX_RESTARTS:
                if self._stop.is_set():
                    return
                self.log.poll()  # findings this supervisor settled count as done
                skip = set(self.log.findings)
                verdict = self._run_worker(skip, isolate)
                self.log.poll()
                if verdict == "done" or self._stop.is_set():
                    return
                if isinstance(verdict, Stall):
                    if self._settle_stall(verdict):
                        continue
                    verdict = list(self.log.in_flight())
                deaths += 1
                stalled = [u for u in verdict if u not in self.log.findings] if isinstance(
                    verdict, list) else []
                if os.environ.get("VFCHECK_DEBUG"):
                    print(f"vfcheck supervisor: verdict={verdict} stalled={stalled} "
                          f"isolate={isolate}", file=sys.stderr)
                # a unit dies at its hard deadline twice, the second time alone (its own
                # worker, the run's floor held), before it fails; env code's BaseException
                # fails a unit in flight alone at once
                if stalled and (set(stalled) <= isolate
                                or (len(stalled) == 1 and stalled[0] in self.crashes)):
                    for unit in stalled:
                        self._settle(unit, "failed",
                                     self._death_message(unit, alone=unit in isolate))
                    isolate -= set(stalled)
                else:
                    isolate |= set(stalled)
                if self.log.plan is None and (REGISTRY.gate, None) in self.log.findings:
                    return
            self._give_up()
        finally:
            if slot:
                self.slots.release()
            self.log.poll()
            self._emit("final")

    def _death_message(self, unit: Unit, *, alone: bool) -> str:
        """Why `unit` ended its worker: env code's `BaseException`, or a kill at the hard
        deadline (`alone`: twice, the second time with nothing else running)."""
        contract = BY_ID[unit[0]].contract
        if unit in self.crashes:
            return (f"{unit[0]} failed — env code {self.crashes[unit]} while it ran; a "
                    "BaseException escapes verifiers' error handling and ends the process "
                    "(vf-eval, a trainer; here vfcheck's check worker, restarted for the other "
                    f"checks). Contract: {contract}.")
        twice = " twice, the second time alone" if alone else ""
        return (f"{unit[0]} did not finish and the worker was killed at its hard "
                f"deadline{twice} (the hook blocked the event loop or ignored cancellation). "
                f"Contract: {contract}.")

    def _settle_stall(self, stall: Stall) -> bool:
        """Fail the unit the watchdog found stuck, naming the hook, and block the task's
        checks that run the same stage; False if no unsettled unit fits the stall."""
        order = {spec.id: i for i, spec in enumerate(BY_ID.values())}

        def runs_stage(unit: Unit) -> bool:
            stages = BY_ID[unit[0]].stages
            return bool(stages) and (stall.stage is None or stall.stage in stages)

        in_flight = list(self.log.in_flight())
        candidates = [stall.unit] if stall.unit is not None and stall.unit[0] in BY_ID \
            and stall.unit not in self.log.findings else []
        candidates += sorted((u for u in in_flight if stall.index is not None
                              and u[1] == stall.index and runs_stage(u)),
                             key=lambda u: order.get(u[0], 99))
        if not candidates and len(in_flight) == 1:
            candidates = in_flight
        if not candidates:
            return False
        unit = candidates[0]
        if stall.how == "blocked":
            why = (f"for {stall.seconds:g}s; no asyncio deadline fires while the loop is "
                   "blocked, so vfcheck killed the worker and checked the rest in a new one")
        else:
            why = (f"still running {stall.seconds:g}s after it was cancelled (by a deadline, "
                   "vfcheck's or verifiers' own), so no deadline can end it; vfcheck killed "
                   "the worker and checked the rest in a new one")
        self._settle(unit, "failed", f"{unit[0]} failed — {stall.what}, {why}. Contract: "
                     f"{BY_ID[unit[0]].contract}.", stall=asdict(stall))
        if stall.index is not None:
            by = unit[0] if unit[1] is None else f"{unit[0]}[{unit[1]}]"
            self.blocked.append({"index": stall.index, "stage": stall.stage, "by": by,
                                 "what": stall.what})
        return True

    def _give_up(self) -> None:
        if self.log.plan is None:
            if (REGISTRY.gate, None) not in self.log.findings:
                self._settle((REGISTRY.gate, None), "error",
                             "the check worker kept dying before the env loaded; see its "
                             "stderr above")
            return
        for unit in expected_units(self.log.plan, self.options.families):
            if unit not in self.log.findings:
                self._settle(unit, "error",
                             f"vfcheck's worker died {MAX_RESTARTS + 1} times; {unit[0]} was "
                             "never run")

    def _run_worker(self, skip: set[Unit], isolate: set[Unit]) -> str | list[Unit] | Stall:
        """Run one worker to its end: "done", the stall its watchdog named, or the units in
        flight when it stalled or died."""
        self.log.poll()
        self.log.started.clear()  # the previous worker's units were settled or are retried
        self.log.done, self.log.stall = False, None
        self._proc = proc = subprocess.Popen(
            [sys.executable, "-m", "vfcheck._isolation.worker"], stdin=subprocess.PIPE,
            env={**os.environ, "PYTHONHASHSEED": str(WORKER_HASH_SEED)},
            stdout=sys.stderr.fileno() if _has_fileno(sys.stderr) else None,
            start_new_session=True,
        )
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(self._spec(skip, isolate)).encode())
        proc.stdin.close()
        started = time.monotonic()
        done_at: float | None = None
        while not self._stop.is_set():
            self.log.poll()
            now = time.monotonic()
            if self.log.done and done_at is None:
                done_at = now
            if proc.poll() is not None:
                self.log.poll()
                if self.log.done and self.log.crash is None:
                    return "done"
                died = list(self.log.in_flight())
                # this worker's crash only: a unit in flight at an earlier one may die
                # otherwise now (killed at its hard deadline, run alone)
                self.crashes = ({} if self.log.crash is None
                                else dict.fromkeys(died, self.log.crash))
                if self.log.plan is None and not died:
                    died = [(REGISTRY.gate, None)]  # it died loading: the env's import or load()
                return died
            if self.log.stall is not None:  # the worker named where it is stuck
                kill_tree(proc)
                return self.log.stall
            if done_at is not None and now - done_at > EXIT_GRACE:
                kill_tree(proc)
                return "done"
            if self.log.ready is None and now - started > IMPORT_DEADLINE:
                kill_tree(proc)
                return [(REGISTRY.gate, None)]
            if self.log.overdue(GRACE):
                in_flight = list(self.log.in_flight())
                kill_tree(proc)
                return in_flight
            time.sleep(0.1)
        kill_tree(proc)
        return "done"

    # -- reading (any process)

    def report(self) -> EnvReport:
        self.log.poll()
        plan = self.log.plan or {}
        order = {spec.id: i for i, spec in enumerate(BY_ID.values())}
        findings = sorted(
            self.log.findings.values(),
            key=lambda f: (order.get(f.check, 99), f.task.index if f.task else -1),
        )
        return EnvReport(
            id=self.env_id,
            harness=self.options.harness,
            sample=list(plan.get("sample", [])),
            tasks=[TaskId(t["index"], t["key"]) for t in plan.get("tasks", [])],
            tiers=list(plan.get("tiers", [])),
            findings=findings,
            worker_starts=self.log.worker_starts,
            starts=dict(self.log.starts),
            timeline={"events": dict(self.log.timeline["events"]),
                      "units": list(self.log.timeline["units"])},
            not_run=[] if self.log.done or self.plan_only else self.not_run(),
        )

    def not_run(self) -> list[str]:
        """The units of the plan without a finding (`gold[2]`); before the plan came (the env
        had not loaded), every selected check (`gold[*]` for a task's), unless the gate's
        own finding ended the env's checks."""
        if self.log.plan is not None:
            units = expected_units(self.log.plan, self.options.families)
        elif (REGISTRY.gate, None) in self.log.findings:
            return []
        else:
            units = [(spec.id, None if spec.scope == "env" else -1)
                     for spec in REGISTRY.select(self.options.families)]
        return [check if index is None else f"{check}[{'*' if index < 0 else index}]"
                for check, index in units if (check, index) not in self.log.findings]


def _has_fileno(stream: Any) -> bool:
    try:
        stream.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    return True
