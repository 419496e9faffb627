"""The pytest front end's state: one `VfcheckSession` on `config`, one collector per env,
one item per check and task, reading the findings that the supervised check workers write.

Process roles:
- without xdist, this process owns the run: it starts one supervised worker per env at
  session start (so verifiers' import overlaps collection) and stops them at the end;
- under `pytest -n N`, the controller owns the run and hands the run directory to each
  xdist worker (`pytest_configure_node`); xdist workers only read the event logs, so an
  env's work is done once, not once per worker.
Nothing here imports verifiers.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from vfcheck.checks import BY_ID
from vfcheck.exits import EXIT_SIGINT
from vfcheck.findings import Finding
from vfcheck.frontends.run import CheckRun, verifiers_version
from vfcheck.isolation.events import EventLog, Unit
from vfcheck.isolation.supervisor import event_file, expected_units
from vfcheck.options import CheckOptions, Resolved

RUN_DIR_KEY = "vfcheck_run_dir"
LIBRARY_REPORT = "library.json"


def pytest_given(config: pytest.Config) -> dict[str, Any]:
    """What the command line gave for each option of the table that has a pytest flag
    (None: not given); `--snapshot-update` is syrupy's (absent under `-p no:syrupy`) and
    `--junit-xml` pytest's own."""
    from vfcheck.option_table import OPTIONS

    return {option.name: getattr(config.option, option.dest, None) or None
            for option in OPTIONS if option.pytest is not None}


def resolved_from_config(config: pytest.Config) -> Resolved:
    """`[tool.vfcheck]` of the pyproject.toml nearest the working directory, overridden by
    the `--vf-*` options. Not pytest's rootdir: pytest computes it before plugin options are
    known, so `--vf-path /other/project/envs` (two words) puts it in that other project."""
    from vfcheck.options import resolve

    return resolve(config.invocation_params.dir, pytest_given(config), front="pytest")


def options_from_config(config: pytest.Config) -> CheckOptions:
    return resolved_from_config(config).check


def rootdir_note(config: pytest.Config, options: CheckOptions) -> list[str]:
    """A line when pytest put its rootdir in another project because it took the value of a
    path option written as two words (`--vf-path /other/envs`) for a test path: pytest
    computes the rootdir, and reads that project's config, before it loads plugins and
    knows their options. vfcheck's own project does not move (`resolved_from_config`)."""
    from vfcheck.option_table import OPTIONS

    flags = {o.pytest for o in OPTIONS if o.pytest and o.kind == "path" and not o.pytest_owner}
    args = [str(a) for a in config.invocation_params.args]
    taken = [(flag, value) for flag, value in itertools.pairwise(args)
             if flag in flags and (config.invocation_params.dir / value).exists()]
    rootdir, project = config.rootpath.resolve(), Path(options.project_dir)
    if not taken or rootdir == project:
        return []
    flag, value = taken[0]
    return [f"vfcheck: pytest's rootdir {rootdir} is not this project ({project}): pytest "
            f"took the value of {flag} for a test path; vfcheck's golden traces stay in "
            f"{options.golden_dir}. Write {flag}={value} to keep pytest's rootdir here too."]


class CheckFailed(Exception):
    """A finding with outcome `failed`: the env broke a contract."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.message)
        self.finding = finding


class VfcheckSession:
    """Registered as a plugin when a `--vf-*` option asks for work."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        from vfcheck.option_table import OptionError

        try:
            found = resolved_from_config(config)
        except OptionError as e:
            raise pytest.UsageError(f"vfcheck: {e}") from e
        self.options, self.run_options = found.check, found.run
        self.env_ids: list[str] = list(found.run.envs)
        self.only: list[str] = list(found.run.only)
        self.check_run = CheckRun(self.env_ids, self.options, self.run_options, front="pytest")
        """The run, started and finished by the process that owns it (not an xdist
        worker)."""
        self.run_dir: Path | None = None
        self.owner = False
        self.library = found.run.library
        self._library_proc: subprocess.Popen[bytes] | None = None

    # -- the run

    @property
    def is_xdist_worker(self) -> bool:
        return hasattr(self.config, "workerinput")

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if self.is_xdist_worker:
            self.run_dir = Path(self.config.workerinput[RUN_DIR_KEY])  # type: ignore[attr-defined]
            return
        self.owner = True
        self.check_run.start()  # SIGTERM becomes an orderly interrupt (exit 143)
        self.run_dir = self.check_run.run_dir
        assert self.run_dir is not None
        if self.library:
            # verifiers is imported there, not here; it runs while collection goes on.
            self._library_proc = subprocess.Popen(
                [sys.executable, "-m", "vfcheck.library", "--json",
                 str(self.run_dir / LIBRARY_REPORT),
                 *(["--no-baseline"] if self.run_options.no_baseline else [])],
                stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """xdist controller: tell each worker where the event logs are."""
        node.workerinput[RUN_DIR_KEY] = str(self.run_dir)

    def log_for(self, env_id: str) -> EventLog:
        assert self.run_dir is not None
        return EventLog(event_file(self.run_dir, env_id, self.options))

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        added: list[pytest.Item] = []
        for env_id in self.env_ids:
            # A virtual path under the rootdir: the terminal groups the items by env.
            collector = EnvCollector.from_parent(
                session, name=env_id, nodeid=env_id, path=config.rootpath / env_id, vf=self)
            collected: list[pytest.Item | pytest.Collector] = list(collector.collect())
            # Report the collection as pytest's own collectors do, so counts and
            # `--collect-only` see these items.
            session.ihook.pytest_collectreport(report=pytest.CollectReport(
                collector.nodeid, "passed", None, collected))
            added += [item for item in collected if isinstance(item, pytest.Item)]
        if self.library:
            library = LibraryCollector.from_parent(
                session, name="verifiers", nodeid=f"verifiers@{verifiers_version()}",
                path=config.rootpath / "verifiers", vf=self)
            found: list[pytest.Item | pytest.Collector] = list(library.collect())
            session.ihook.pytest_collectreport(report=pytest.CollectReport(
                library.nodeid, "passed", None, found))
            added += [item for item in found if isinstance(item, pytest.Item)]
        if self.only:
            added = [item for item in added if any(
                item.name == want or item.name.split("[")[0] == want for want in self.only)]
        items.extend(added)

    def library_report(self) -> dict[str, Any]:
        """The library suite's JSON report, once its run has written it."""
        assert self.run_dir is not None
        path = self.run_dir / LIBRARY_REPORT
        while not path.exists():
            if self._library_proc is not None and self._library_proc.poll() is not None:
                if not path.exists():
                    raise RuntimeError("vfcheck: the library suite ended without a report "
                                       f"(exit {self._library_proc.returncode})")
            time.sleep(0.2)
        report: dict[str, Any] = json.loads(path.read_text())
        return report

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        if not self.env_ids:
            return [f"vfcheck: library suite, verifiers {verifiers_version()}"]
        return [*self.check_run.header(), *rootdir_note(config, self.options)]

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """The owner's line per env on its golden traces (as syrupy's snapshot summary)."""
        from vfcheck.frontends.report import golden_summary

        if not self.owner:
            return
        lines = [line for report in self.check_run.reports()
                 if (line := golden_summary(report)) is not None]
        if lines:
            terminalreporter.write_sep("-", "vfcheck golden traces")
            for line in lines:
                terminalreporter.write_line(line)
        from vfcheck.frontends.probe_table import probe_table

        tables = [t for report in self.check_run.reports() if (t := probe_table(report))]
        if tables:
            terminalreporter.write_sep("-", "vfcheck reward probes")
            for table in tables:
                for line in table.lines():
                    terminalreporter.write_line(line)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """The JSON report of what was found so far, as items end (`CheckRun.checkpoint`)."""
        if self.owner and report.when == "teardown":
            self.check_run.checkpoint()

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        """Ctrl-C, or SIGTERM (CI cancelling a job: `vfcheck.exits.Terminated`, which ends
        the session as Ctrl-C does, so that reports are written and workers stopped)."""
        if isinstance(excinfo.value, KeyboardInterrupt):  # not `pytest.exit()`
            self.check_run.interrupted(excinfo.value)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not self.owner:
            return
        try:
            self.check_run.finish()  # -x, -k, an interrupt: stops the workers left
            if session.exitstatus == pytest.ExitCode.INTERRUPTED or self.check_run.interrupt:
                # as `vfcheck check`: 130 interrupted (SIGINT), 143 terminated (SIGTERM)
                session.exitstatus = self.check_run.interrupt or EXIT_SIGINT
            if self._library_proc is not None and self._library_proc.poll() is None:
                self._library_proc.kill()
        finally:
            self.check_run.close()

    def replay_command(self, env_id: str, item_name: str) -> str:
        return self.check_run.replay_command("--vf-only", item_name, env_ids=[env_id])


class EnvCollector(pytest.Collector):
    """One env: its items come from the plan its check worker announces."""

    def __init__(self, *, vf: VfcheckSession, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.vf = vf

    def collect(self) -> list[CheckItem]:
        log = self.vf.log_for(self.name)
        # A passing `load` finding comes just before the plan; a failing one ends the run.
        log.wait(lambda log: log.plan is not None or (
            ("load", None) in log.findings and log.findings["load", None].outcome != "passed"))
        units: list[Unit] = [("load", None)]
        if log.plan is not None:
            units = expected_units(log.plan, self.vf.options.families)
        # Node ids given as strings parse the way pytest parses the ids it caches, so
        # `--lf` finds these items again (pytest 9 keeps node ids structured).
        return [
            CheckItem.from_parent(self, name=_unit_name(u), nodeid=f"{self.name}::{_unit_name(u)}",
                                  unit=u)
            for u in units
        ]


class LibraryCollector(pytest.Collector):
    """`verifiers@<version>`: one item per library finding (`usage`, `api`, `lifecycle`,
    `preview`). The owner process runs the suite; every process reads its report."""

    def __init__(self, *, vf: VfcheckSession, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.vf = vf

    def collect(self) -> list[LibraryItem]:
        (env,) = self.vf.library_report()["envs"]
        return [
            LibraryItem.from_parent(self, name=f["check"], nodeid=f"{self.nodeid}::{f['check']}",
                                    finding=Finding.from_dict(f))
            for f in env["findings"]
        ]


class LibraryItem(pytest.Item):
    """A library finding: `expected` (a baselined behaviour) is an xfail."""

    def __init__(self, *, finding: Finding, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.finding = finding

    def runtest(self) -> None:
        outcome = self.finding.outcome
        if outcome == "expected":
            pytest.xfail(f"baselined: {self.finding.message}")
        if outcome == "skipped":
            raise pytest.skip.Exception(self.finding.message, _use_item_location=True)
        if outcome in ("failed", "error"):
            raise CheckFailed(self.finding)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> str:
        return str(excinfo.value)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, 0, self.nodeid


def _unit_name(unit: Unit) -> str:
    check, index = unit
    return check if index is None else f"{check}[{index}]"


class CheckItem(pytest.Item):
    """One check on one task (or on the env): passes, fails, skips or errors as its
    finding says."""

    def __init__(self, *, unit: Unit, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.unit = unit
        self.finding: Finding | None = None
        self.add_marker(pytest.mark.vfcheck(family=BY_ID[unit[0]].family))

    @property
    def vf(self) -> VfcheckSession:
        assert isinstance(self.parent, EnvCollector)
        return self.parent.vf

    def setup(self) -> None:
        log = self.vf.log_for(self.parent.name)  # type: ignore[union-attr]
        log.wait(lambda log: self.unit in log.findings)
        self.finding = log.findings.get(self.unit)
        if self.finding is None:
            raise RuntimeError(
                f"vfcheck: no finding for {self.name}: the check run ended without it "
                "(see the worker's output above)")
        if self.finding.outcome == "error":
            raise RuntimeError(f"vfcheck error: {self.finding.message}")

    def runtest(self) -> None:
        assert self.finding is not None
        if self.finding.outcome == "expected":  # allowed by the user (`vfcheck.allow`)
            pytest.xfail(self.finding.message)
        if self.finding.outcome == "skipped":
            # Reported at the item (env::check[i]), not at this line of vfcheck.
            raise pytest.skip.Exception(self.finding.message, _use_item_location=True)
        if self.finding.outcome == "failed":
            raise CheckFailed(self.finding)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> str:
        if isinstance(excinfo.value, CheckFailed):
            finding = excinfo.value.finding
            lines = [finding.message, "", "replay: " + self.vf.replay_command(
                self.parent.name, self.name)]  # type: ignore[union-attr]
            return "\n".join(lines)
        return str(excinfo.value) + "\n\nreplay: " + self.vf.replay_command(
            self.parent.name, self.name)  # type: ignore[union-attr]

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, 0, f"{self.parent.name}::{self.name}"  # type: ignore[union-attr]
