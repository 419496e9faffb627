"""The pytest front end's state: one `VfcheckSession` on `config`, one collector per env,
one item per check and task, reading the findings that the supervised check workers write.

Who checks an env: without xdist, this process (one supervised worker per env, started at
session start so that verifiers' import overlaps collection). Under `pytest -n N` with a
`--dist` that keeps an env's items on one xdist worker and a worker on another machine (or
`--vf-spread=workers`: `spreads_envs`), the controller only loads each env to learn its
items and each env is checked on the xdist worker that runs them; the reports come back in
`workeroutput`. Otherwise the controller checks every env once and the xdist workers only
read its event logs. Nothing here imports verifiers.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from vfcheck._frontends.library_run import LibraryRunError, library_report, start_library_run
from vfcheck._frontends.node_ids import keep_node_ids, only_items
from vfcheck._frontends.run import CheckRun
from vfcheck._frontends.xdist_spread import (
    PLANS_KEY,
    REPORTS_KEY,
    SPREAD_KEY,
    gateway_here,
    queued_items,
    spreads_envs,
    xdist_note,
)
from vfcheck._isolation.events import EventLog, Unit
from vfcheck._isolation.supervisor import event_file, expected_units
from vfcheck._options.resolved import CheckOptions, Resolved
from vfcheck._shared.compat import verifiers_version
from vfcheck._shared.findings import EnvReport, Finding
from vfcheck.checks import BY_ID

RUN_DIR_KEY = "vfcheck_run_dir"


def pytest_given(config: pytest.Config) -> dict[str, Any]:
    """What the command line gave for each option of the table that has a pytest flag
    (None: not given); `--snapshot-update` is syrupy's (absent under `-p no:syrupy`) and
    `--junit-xml` pytest's own."""
    from vfcheck._options.table import OPTIONS

    return {option.name: getattr(config.option, option.dest, None) or None
            for option in OPTIONS if option.pytest is not None}


def resolved_from_config(config: pytest.Config) -> Resolved:
    """`[tool.vfcheck]` of the pyproject.toml nearest the working directory, overridden by
    the `--vf-*` options. Not pytest's rootdir: pytest computes it before plugin options are
    known, so `--vf-path /other/project/envs` (two words) puts it in that other project."""
    from vfcheck._frontends.registry_names import check_registry_names
    from vfcheck._frontends.step_summary import check_step_summary
    from vfcheck._options.resolved import resolve

    found = resolve(config.invocation_params.dir, pytest_given(config), front="pytest")
    check_step_summary()
    check_registry_names(found)
    found.find_envs()
    return found


def rootdir_note(config: pytest.Config, options: CheckOptions) -> list[str]:
    """A line when pytest put its rootdir in another project because it took the value of a
    path option written as two words (`--vf-path /other/envs`) for a test path: pytest
    computes the rootdir, and reads that project's config, before it loads plugins and
    knows their options. vfcheck's own project does not move (`resolved_from_config`)."""
    from vfcheck._options.table import OPTIONS

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
        from vfcheck._options.table import OptionError

        try:
            found = resolved_from_config(config)
        except OptionError as e:
            raise pytest.UsageError(f"vfcheck: {e}") from e
        self.options, self.run_options = found.check, found.run
        shard = found.run.shard
        self.env_ids: list[str] = list(found.run.envs) if shard is None else shard.pick(
            found.run.envs)
        self.empty_shard = (shard.label, shard.empty_note(found.run.envs)) \
            if shard and not self.env_ids else None
        """A shard with no env: its label and why (one skipped item says it)."""
        self.only: list[str] = list(found.run.only)
        if self.only:  # only what the named items need runs (`Registry.families_of`)
            from vfcheck.checks import REGISTRY

            self.options.families = REGISTRY.families_of(self.only, self.options.families)
        keep_node_ids(config, self.env_ids)
        self.spread = spreads_envs(config, found.run.spread)
        self.plans: dict[str, dict[str, Any] | None] | None = None
        """Each env's plan, from the controller, on a spreading xdist worker."""
        if self.spread and self.is_xdist_worker:
            worker = str(config.workerinput["workerid"])  # type: ignore[attr-defined]
            self.check_run = CheckRun(self.env_ids, self.options, dataclasses.replace(
                self.run_options, json=None, junit_xml=None), front="pytest", worker=worker)
        else:
            self.check_run = CheckRun(self.env_ids, self.options, self.run_options,
                                      front="pytest", plan_only=self.spread)
        """The run, started and finished by the process that owns it (without xdist, or
        the controller); on a spreading xdist worker, the checks of the envs it runs."""
        self.run_dir: Path | None = None
        self.owner = False
        """This process writes the reports (not an xdist worker)."""
        self.library = found.run.library
        self._library_proc: subprocess.Popen[bytes] | None = None

    # -- the run

    @property
    def is_xdist_worker(self) -> bool:
        return hasattr(self.config, "workerinput")

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if self.is_xdist_worker:
            workerinput = self.config.workerinput  # type: ignore[attr-defined]
            self.run_dir = Path(workerinput[RUN_DIR_KEY])
            if self.spread:
                if PLANS_KEY in workerinput:
                    self.plans = dict(workerinput[PLANS_KEY])
                self.check_run.start(env_ids=[])  # each env at its items (`log_of`)
            return
        self.owner = True
        self.check_run.start()  # SIGTERM becomes an orderly interrupt (exit 143)
        self.run_dir = self.check_run.run_dir
        assert self.run_dir is not None
        if self.library:
            self._library_proc = start_library_run(
                self.run_dir, no_baseline=self.run_options.no_baseline)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """xdist controller: tell each worker where the event logs are, and whether the
        envs are spread; a remote worker gets each env's plan (which waits for the envs to
        load, and holds up the worker's start)."""
        node.workerinput[RUN_DIR_KEY] = str(self.run_dir)
        node.workerinput[SPREAD_KEY] = self.spread
        spec = getattr(getattr(node, "gateway", None), "spec", None)
        if self.spread and not (spec is not None and gateway_here(spec)):
            node.workerinput[PLANS_KEY] = self.env_plans()

    def env_plans(self) -> dict[str, dict[str, Any] | None]:
        """Each env's plan as its plan-only check announced it (None: it did not load)."""
        plans: dict[str, dict[str, Any] | None] = {}
        for env_id in self.env_ids:
            log = self.log_for(env_id)
            log.wait(lambda log: log.plan is not None or log.final)
            plans[env_id] = log.plan
        return plans

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """xdist controller: the env reports a spreading worker checked."""
        sent = getattr(node, "workeroutput", {}).get(REPORTS_KEY)
        for data in json.loads(sent) if sent else []:
            report = EnvReport.from_dict(data)
            self.check_run.received[report.id] = report

    def log_for(self, env_id: str) -> EventLog:
        assert self.run_dir is not None
        return EventLog(event_file(self.run_dir, env_id, self.options))

    def log_of(self, item: CheckItem) -> EventLog:
        """The event log `item`'s finding comes to. A spreading xdist worker starts the
        check of the item's env now, and of the envs of the items queued behind it."""
        env_id = item.parent.name  # type: ignore[union-attr]
        if not self.spread:
            return self.log_for(env_id)
        check = self.check_run.launch(env_id)
        for queued in queued_items(item.session):
            if isinstance(queued, CheckItem):
                self.check_run.launch(queued.parent.name)  # type: ignore[union-attr]
        return EventLog(check.path)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        added: list[pytest.Item] = []
        if self.empty_shard is not None:
            label, reason = self.empty_shard
            added.append(EmptyShardItem.from_parent(
                session, name=f"vfcheck-shard[{label}]", nodeid=f"vfcheck-shard[{label}]",
                reason=reason))
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
            try:
                found: list[pytest.Item | pytest.Collector] = list(library.collect())
            except LibraryRunError as e:  # a collection error of one line, as pytest's own
                session.ihook.pytest_collectreport(report=pytest.CollectReport(
                    library.nodeid, "failed", str(e), []))
            else:
                session.ihook.pytest_collectreport(report=pytest.CollectReport(
                    library.nodeid, "passed", None, found))
                added += [item for item in found if isinstance(item, pytest.Item)]
        if self.only:
            added = only_items(added, self.only)
        items.extend(added)

    def library_report(self) -> dict[str, Any]:
        """The library suite's JSON report, once its run has written it (LibraryRunError
        when it ended without, or stalled: `vfcheck._frontends.library_run`)."""
        assert self.run_dir is not None
        return library_report(self.run_dir, self._library_proc)

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        if self.empty_shard is not None:
            return [f"vfcheck: {self.empty_shard[1]}"]
        if not self.env_ids:
            return [f"vfcheck: library suite, verifiers {verifiers_version()}"]
        xdist = xdist_note(self.config, self.spread, self.run_options.spread,
                           len(self.env_ids))
        return [*self.check_run.header(), *xdist, *rootdir_note(config, self.options)]

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """The owner's sections: golden traces (as syrupy's snapshot summary), why findings
        were skipped or expected, how verifiers' processes started (warm or cold), reward
        probes, and what to do next."""
        from vfcheck._frontends.next_steps import pytest_sections

        if not self.owner:
            return
        for title, lines in pytest_sections(self.check_run.reports(), self.options,
                                            self.run_options):
            terminalreporter.write_sep("-", f"vfcheck {title}")
            for line in lines:
                terminalreporter.write_line(line, **(
                    {"yellow": True, "bold": True} if line.startswith("vfcheck: WARNING")
                    else {}))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """The JSON report of what was found so far, as items end (`CheckRun.checkpoint`)."""
        if self.owner and report.when == "teardown":
            self.check_run.checkpoint()

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        """Ctrl-C, or SIGTERM (CI cancelling a job: `vfcheck._shared.exits.Terminated`, which ends
        the session as Ctrl-C does, so that reports are written and workers stopped)."""
        if isinstance(excinfo.value, KeyboardInterrupt) and not isinstance(
                excinfo.value, pytest.Session.Interrupted):  # not `pytest.exit()`, nor
            self.check_run.interrupted(excinfo.value)   # pytest's stop on collection errors

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.is_xdist_worker and self.spread:
            try:  # xdist sends workeroutput once every sessionfinish is done
                reports = self.check_run.finish()
                self.config.workeroutput[REPORTS_KEY] = json.dumps(  # type: ignore[attr-defined]
                    [report.as_dict() for report in reports], default=str)
            finally:
                self.check_run.close()
            return
        if not self.owner:
            return
        try:
            reports = self.check_run.finish()  # -x, -k, an interrupt: stops the workers left
            usage = [f.message for r in reports for f in r.findings if f.usage]
            if usage and session.exitstatus != pytest.ExitCode.USAGE_ERROR:
                # under xdist the workers' collection raised it, and xdist says only "no
                # tests ran": the controller says what, and exits as a usage error
                sys.stderr.write(f"ERROR: vfcheck: {usage[0]}\n")
                session.exitstatus = pytest.ExitCode.USAGE_ERROR
            if self.check_run.interrupt:
                # as `vfcheck check`: 130 interrupted (SIGINT), 143 terminated (SIGTERM);
                # pytest's own INTERRUPTED (2) also stands for errors during collection
                session.exitstatus = self.check_run.interrupt
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
        if self.vf.plans is not None:  # a remote worker: the controller sent the plans
            plan = self.vf.plans.get(self.name)
        else:
            log = self.vf.log_for(self.name)  # the owner's, or the controller's plan-only one
            # A passing `load` finding comes just before the plan; a failing one ends the run.
            log.wait(lambda log: log.plan is not None or (
                ("load", None) in log.findings
                and log.findings["load", None].outcome != "passed"))
            plan = log.plan
            load = log.findings.get(("load", None))
            if load is not None and load.usage:  # the user's input: no verdict on the env
                raise pytest.UsageError(f"vfcheck: {load.message}")
        units: list[Unit] = [("load", None)]
        if plan is not None:
            units = expected_units(plan, self.vf.options.families)
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
        # the run's own reports (--vf-json, --vf-html) hold the library env too
        self.vf.check_run.others = [EnvReport.from_dict(env)]
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


class EmptyShardItem(pytest.Item):
    """`--vf-shard K/N` with more shards than envs: one skipped item saying so, so the
    shard's job passes visibly (pytest would exit 5, collecting nothing)."""

    def __init__(self, *, reason: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.reason = reason

    def runtest(self) -> None:
        raise pytest.skip.Exception(self.reason, _use_item_location=True)

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
        log = self.vf.log_of(self)
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
        if self.finding.outcome == "expected":  # allowed by the user (`vfcheck._options.allow`)
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


