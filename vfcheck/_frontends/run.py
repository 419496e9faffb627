"""One check run, the same for `vfcheck check` and `pytest --vf-env`: `CheckRun`.

It owns the run's life: the header (what runs, the command that runs it again, and the
run's share of the machine), a temp run dir for the event logs, one supervised check worker
per env (`EnvCheck`, as many at a time as `vfcheck._isolation.capacity` chose), SIGTERM as an
orderly interrupt (`vfcheck._shared.exits`), the JSON report, and at the end the sweep of work dirs
that killed workers left and the removal of the run dir. The front ends only show findings:
a table per env, or one pytest item each.

Nothing here imports verifiers.
"""

from __future__ import annotations

import contextlib
import functools
import shlex
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from vfcheck._shared.compat import verifiers_version
from vfcheck._shared.exits import (
    EXIT_FAILED,
    EXIT_OK,
    deferred_interrupts,
    first_interrupt_wins,
    ignore_interrupts,
    interrupt_code,
    raise_interrupt,
    signal_name,
)

if TYPE_CHECKING:
    from vfcheck._isolation.capacity import Capacity
    from vfcheck._isolation.supervisor import EnvCheck
    from vfcheck._options.resolved import CheckOptions, RunOptions
    from vfcheck._options.table import Front
    from vfcheck._shared.findings import EnvReport


class CheckRun:
    """The envs' checks of one front-end process: `start()`, follow `checks`, then
    `finish()` (the reports, written out) and `close()` (or use it as a context manager)."""

    def __init__(self, env_ids: list[str], options: CheckOptions, run: RunOptions, *,
                 front: Front, worker: str = "main", plan_only: bool = False) -> None:
        self.worker = worker
        """Who checks the envs started here (`EnvReport.worker`): `main`, or an xdist
        worker's id."""
        self.plan_only = plan_only
        """Load each env and announce its plan, check nothing (the xdist controller: its
        workers check the envs, and collect their items from these plans)."""
        self.received: dict[str, EnvReport] = {}
        """Reports of envs checked in other processes (xdist workers), by env id: they
        stand for the plan-only checks of those envs here."""
        self.others: list[EnvReport] = []
        """Reports of this run made by other means than an env check (`pytest
        --vf-library`'s library suite), written with the envs'."""
        self._slots: threading.BoundedSemaphore | None = None
        self._signals: list[int] = []
        """SIGINT/SIGTERM codes in arrival order, from `start` on (`first_interrupt_wins`)."""
        self.env_ids = env_ids
        self.options = options
        self.run = run
        self.front: Front = front
        self.run_dir: Path | None = None
        self.checks: dict[str, EnvCheck] = {}
        self.interrupt: int | None = None
        """130 or 143 once the run was interrupted (SIGINT, SIGTERM)."""
        self.finished = False
        self._written: tuple[float, int] = (0.0, -1)
        """When the JSON report was last written, with how many findings."""
        self._checkpoint_every = self.CHECKPOINT_EVERY
        self._cleanup = contextlib.ExitStack()

    # -- what runs

    def replay_command(self, *extra: str, env_ids: list[str] | None = None) -> str:
        """The command line that runs these envs (or `env_ids`) again with these options,
        followed by `extra` words (`--vf-only ITEM`)."""
        envs = self.env_ids if env_ids is None else env_ids
        words = self.options.replay_args(pytest=self.front == "pytest")
        if self.front == "pytest":
            return shlex.join(["pytest", *[w for e in envs for w in ("--vf-env", e)],
                               *words, *extra])
        return shlex.join(["vfcheck", "check", *envs, *words, *extra])

    def header(self) -> list[str]:
        """What runs, and the command that runs it again (as pytest-randomly prints its
        seed), `rerun: ...` (a failing item's own line is `replay: ...`): the same lines in
        both front ends."""
        from vfcheck._frontends.views import header_lines
        from vfcheck._version import __version__
        from vfcheck.checks import select

        o = self.options
        shard = "" if self.run.shard is None else (
            f" (shard {self.run.shard.label} of {len(set(self.run.envs))} envs)")
        lines = [
            f"vfcheck {__version__} · verifiers {verifiers_version()} · envs "
            f"{', '.join(self.env_ids)}{shard} · harness {o.harness} · seed "
            f"{o.played_seed} · sample {o.sample} · timeout {o.timeout:g}s"
            + ("" if o.load_timeout is None else f" · load timeout {o.load_timeout:g}s"),
        ]
        lines += header_lines(o, {spec.family for spec in select(o.families)})
        return [*lines, f"rerun: {self.replay_command()}", self.capacity.line()]

    @functools.cached_property
    def capacity(self) -> Capacity:
        """This run's share of the machine (`vfcheck._isolation.capacity`), measured once."""
        from vfcheck._isolation.capacity import measure

        return measure(len(self.env_ids), envs_at_once=self.run.envs_at_once,
                       episodes_at_once=self.run.episodes_at_once)

    # -- the run

    def start(self, env_ids: list[str] | None = None) -> None:
        """SIGTERM raises `Terminated` from here on; the workers of `env_ids` (default:
        every env) start, each env waiting for a slot. More can `launch` later."""
        self._signals = self._cleanup.enter_context(first_interrupt_wins())
        self.run_dir = Path(tempfile.mkdtemp(prefix=f"vfcheck-{self.front}-"))
        self._slots = threading.BoundedSemaphore(self.capacity.envs_at_once)
        for env_id in self.env_ids if env_ids is None else env_ids:
            self.launch(env_id)

    def launch(self, env_id: str) -> EnvCheck:
        """The check of `env_id`, started now unless it already was (after `start`)."""
        from vfcheck._isolation.supervisor import EnvCheck

        if env_id in self.checks:
            return self.checks[env_id]
        assert self.run_dir is not None and self._slots is not None, "start() first"
        check = EnvCheck(env_id, self.options, self.run_dir, slots=self._slots,
                         pytest=self.front == "pytest", plan_only=self.plan_only,
                         capacity=self.capacity.for_worker())
        self.checks[env_id] = check
        check.start()
        return check

    def interrupted(self, interrupt: BaseException) -> int:
        """Note an interrupt (KeyboardInterrupt or `Terminated`); its exit code."""
        if self.interrupt is None:  # the first signal's, even if a later one unwound us
            self.interrupt = self._signals[0] if self._signals else interrupt_code(interrupt)
        return self.interrupt

    def reports(self) -> list[EnvReport]:
        """Each env's report, in the order of `env_ids`: received from the process that
        checked it, else from its check here (what was found so far)."""
        reports = []
        for env_id in self.env_ids:
            if env_id in self.received:
                reports.append(self.received[env_id])
            elif env_id in self.checks:
                report = self.checks[env_id].report()
                report.worker, report.host = self.worker, socket.gethostname()
                reports.append(report)
        return [*reports, *self.others]

    CHECKPOINT_EVERY = 1.0
    """Seconds between two writes of the JSON report while the run goes on, at least."""
    CHECKPOINT_SHARE = 0.1
    """At most this share of the front end's time goes to those writes: a big report waits
    longer between two (`_checkpoint_every`)."""

    def checkpoint(self) -> None:
        """Write the JSON report of what was found so far, when there is more than last
        time (at most once a `CHECKPOINT_EVERY`): even a front end killed outright
        (SIGKILL, out of memory) leaves its findings behind. A signal meanwhile waits for
        the write, then interrupts as it would have."""
        if not self.run.json or time.monotonic() - self._written[0] < self._checkpoint_every:
            return
        with deferred_interrupts() as arrived:
            reports = self.reports()
            found = sum(len(report.findings) for report in reports)
            if found != self._written[1]:
                self._write(reports)
        if arrived:
            raise_interrupt(arrived[0])

    def finish(self) -> list[EnvReport]:
        """Stop the workers still running (an interrupt, `-x`, `-k`) and write the reports
        with what was found. SIGINT and SIGTERM wait meanwhile, so a second Ctrl-C cannot
        cut the report short; one that came is noted as the run's interrupt."""
        with deferred_interrupts() as arrived:
            for check in self.checks.values():
                if not check.log.final:
                    check.stop()
            if arrived and self.interrupt is None:
                self.interrupt = arrived[0]
            reports = self.reports()
            self._write(reports, final=True)
            self.finished = True
        if arrived and self.interrupt is None:
            self.interrupt = arrived[0]
        return reports

    def _write(self, reports: list[EnvReport], *, final: bool = False) -> None:
        """The JSON report; at the end (`final`) the JUnit XML, the HTML report and the
        step summary too."""
        from vfcheck._frontends.report_files import write_reports

        started = time.monotonic()
        write_reports(reports, self.run, verifiers=verifiers_version(),
                      seed=self.options.played_seed, interrupted=signal_name(self.interrupt),
                      final=final, junit=self.front == "cli")  # pytest writes its own
        now = time.monotonic()
        self._checkpoint_every = max(self.CHECKPOINT_EVERY,
                                     (now - started) / self.CHECKPOINT_SHARE)
        self._written = (now, sum(len(report.findings) for report in reports))

    def exit_code(self, reports: list[EnvReport]) -> int:
        if self.interrupt is not None:
            return self.interrupt
        return EXIT_FAILED if any(report.bad for report in reports) else EXIT_OK

    def close(self) -> None:
        """Finish if the front end could not (the reports are written whatever happened),
        sweep the work dirs of workers killed at a hard deadline or by `stop`, remove the
        run dir (its event logs were read into the reports), restore SIGTERM."""
        from vfcheck._isolation.workdirs import sweep

        try:
            if not self.finished and self.run_dir is not None:
                self.finish()  # an interrupt came before the front end could finish
            with deferred_interrupts():
                sweep()
                if self.run_dir is not None:
                    shutil.rmtree(self.run_dir, ignore_errors=True)
        finally:
            self._cleanup.close()
            if self.interrupt is not None and self.front == "cli":
                # `vfcheck check` ends now, with the first signal's code: a later Ctrl-C or
                # SIGTERM (the handlers are restored) must not kill it on its way out
                ignore_interrupts()

    def __enter__(self) -> CheckRun:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
