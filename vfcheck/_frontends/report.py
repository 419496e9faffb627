"""What a person and a CI read: rich tables, the JSON report, JUnit XML."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.table import Table

from vfcheck._shared.findings import EnvReport, Finding
from vfcheck._shared.paths import shown_path, write_atomically


def table_cell(text: str, limit: int = 80) -> str:
    """`text` on one line, cut at `limit` characters: a rich table cell."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def node_name(finding: Finding) -> str:
    """`gold[1]` for a task's finding, `load` for the env's: the pytest item name too."""
    return finding.check if finding.task is None else f"{finding.check}[{finding.task.index}]"


OUTCOME_STYLE = {"passed": "green", "failed": "bold red", "error": "bold magenta",
                 "skipped": "yellow", "expected": "cyan"}


def short_message(finding: Finding) -> str:
    """The message without its `env '...', task ... :` prefix (the table has columns for it)."""
    first = finding.message.splitlines()[0]
    if first.startswith("env '") and ": " in first:
        first = first.split(": ", 1)[1]
    return first


def whole_message(finding: Finding) -> str:
    """Every line of the message, without its `env '...', task ... :` prefix: `-v` cuts no
    reason (the table folds it)."""
    first, *rest = finding.message.splitlines() or [""]
    return "\n".join([short_message(Finding(finding.check, finding.family, finding.task,
                                             finding.outcome, first)), *rest])


def findings_table(env: EnvReport, *, every: bool = True) -> Table:
    """A row per finding (`every`), or per failed or errored one: `-v`, or the compact
    report's failures."""
    from vfcheck._frontends.outcome_grid import counts_text, short_key

    table = Table(title=f"{env.id}: {counts_text(env)}" if every else f"{env.id} failures",
                  title_justify="left")
    table.add_column("check", no_wrap=True)
    table.add_column("task", overflow="fold")
    table.add_column("outcome", no_wrap=True)
    table.add_column("message", overflow="fold")
    for f in env.findings:
        if not (every or f.bad):
            continue
        task = "-" if f.task is None else f"{f.task.index} {short_key(f.task.key, 24)}"
        table.add_row(escape(f.check), escape(task),  # env text is no rich markup
                      f"[{OUTCOME_STYLE[f.outcome]}]{f.outcome}[/]",
                      escape(whole_message(f)))
    return table


def compact_lines(env: EnvReport, width: int = 100) -> list[str]:
    """pytest's report for one env: its counts, then its family x task grid of marks
    (`.` passed, `F` failed, `E` error, `s` skipped, `x` expected) and what the task
    columns are."""
    from vfcheck._frontends.outcome_grid import counts_text, outcome_grid

    grid = outcome_grid(env)
    lines = [f"{env.id}: {counts_text(env)}", *grid.lines(width)]
    if grid.tasks:
        lines += grid.legend_lines(width)
    return lines


def failure_text(env: EnvReport) -> list[str]:
    """The whole message of every failed or errored finding, for below the table."""
    return [f"{node_name(f)} {f.outcome.upper()}: {f.message}" for f in env.findings if f.bad]


def tier_summary(env: EnvReport) -> str | None:
    """One line on the harness tier each role played on, and why: `vfc-tool tiers: agent
    fast (vfcheck-chat: replaces 'bash'; the tools run in the env's tool servers)`."""
    if not env.tiers:
        return None
    roles = [f"{t.get('role')} {t.get('tier')} ({t.get('harness')}: {t.get('reason')})"
             for t in env.tiers]
    return f"{env.id} tiers: {'; '.join(roles)}"


def _indices(findings: Sequence[Finding]) -> str:
    """`[0-2]`, `[0,2,5]`, or nothing for the env's own finding."""
    numbers = sorted({f.task.index for f in findings if f.task is not None})
    if not numbers:
        return ""
    if len(numbers) > 2 and numbers == list(range(numbers[0], numbers[-1] + 1)):
        return f"[{numbers[0]}-{numbers[-1]}]"
    return "[" + ",".join(map(str, numbers)) + "]"


def _reason(finding: Finding) -> str:
    """The finding's message without where it is (`env 'x', task 1 (key): `) and without
    the allow prefix (`allowed (reason): `): the check's own words."""
    text = finding.message.splitlines()[0]
    if finding.outcome == "expected" and text.startswith("allowed (") and "): " in text:
        text = text.split("): ", 1)[1]
    return short_message(Finding(finding.check, finding.family, finding.task, finding.outcome,
                                 text, finding.details))


def explained(report: EnvReport, allow_from: dict[str, str] | None = None) -> list[str]:
    """A line per check whose findings were skipped or expected, with why: the reason the
    check gave, or the user's reason and the allow entry (with where it is set)."""
    lines: list[str] = []
    for outcome in ("skipped", "expected"):
        groups: dict[tuple[str, str], list[Finding]] = {}
        for f in report.findings:
            if f.outcome != outcome:
                continue
            allowed = f.details.get("allowed") or {}
            if allowed:
                key = f"allowed by {allowed.get('pattern')!r} ({allowed.get('reason')})"
                where = (allow_from or {}).get(str(allowed.get("pattern")))
                key += f", set in {where}" if where else ""
            elif (f.details.get("golden") or {}).get("action") == "missing":
                path = Path(f.details["golden"].get("path", "golden"))
                key = f"no golden trace yet in {shown_path(path.parent)}"
            else:
                key = _reason(f)
            groups.setdefault((f.check, key), []).append(f)
        if not groups:
            continue
        lines.append(f"{report.id} {outcome} ({sum(map(len, groups.values()))}):")
        lines += [f"  {check}{_indices(found)}: {why}" for (check, why), found in
                  groups.items()]
    return lines


def show_reports(console: Any, reports: list[EnvReport], *, verbose: bool = False,
                 allow_from: dict[str, str] | None = None,
                 interrupted: str | None = None) -> None:
    """Per env: its counts and family x task grid of marks, the rows of its failures and
    errors (`verbose`: a row per finding) with their whole messages, why findings were
    skipped or expected (`allow_from`: where each allow entry is set), each family's summary
    lines (golden traces, reward probes); the summary line last."""
    from vfcheck._frontends.outcome_grid import counts_text
    from vfcheck._frontends.views import summary_lines
    from vfcheck._host.warm_plan import starts_line

    def plain(line: str) -> None:
        console.print(line, highlight=False, markup=False, soft_wrap=True)

    for report in reports:
        if verbose:
            console.print(findings_table(report))
        else:
            for line in compact_lines(report, width=max(60, console.width)):
                plain(line)
        failures = failure_text(report)
        if failures and not verbose:  # whole, once: no table cutting them short first
            plain(f"{report.id} failures ({len(failures)}):")
        for text in failures:
            plain(text)
        for text in explained(report, allow_from):  # wrapped at words: reasons are long
            console.print(text, highlight=False, markup=False)
        if (tiers := tier_summary(report)) is not None:
            plain(tiers)
        if report.starts:  # how verifiers' processes started (`vfcheck._host.warm_starts`)
            plain(f"{report.id} {starts_line(report.starts)}")
        for line in summary_lines(report):  # each family's own (`vfcheck._frontends.views`)
            plain(line)
    failing = [f for r in reports for f in r.findings if f.bad]
    if failing:
        console.print(f"[bold red]{len(failing)} finding(s) failed or errored[/]")
    if reports:
        everything = EnvReport(id="all", findings=[f for r in reports for f in r.findings],
                               not_run=[unit for r in reports for unit in r.not_run])
        cut = "" if interrupted is None else (
            f"; interrupted ({interrupted}): the reports are partial")
        plain(f"vfcheck: {counts_text(everything)} ({len(reports)} env"
              f"{'' if len(reports) == 1 else 's'}){cut}")


def json_report(
    envs: list[EnvReport], *, verifiers: str | None, seed: int | None,
    shard: dict[str, Any] | None = None, final: bool = True, interrupted: str | None = None,
) -> dict[str, Any]:
    """The JSON report; `shard` (`vfcheck._shared.shards.Shard.as_dict`) when a run checked one
    shard of its envs. `complete` is false for a checkpoint (`final` false), a run cut short
    (`interrupted`: `SIGTERM`, `SIGINT`) and any env with units not run: a CI job that
    archives a cut-off run's report can tell it from a verdict."""
    from vfcheck._version import __version__

    complete = final and interrupted is None and not any(env.not_run for env in envs)
    return {"vfcheck": __version__, "verifiers": verifiers, "seed": seed, "shard": shard,
            "complete": complete, "interrupted": interrupted,
            "envs": [_env_dict(env) for env in envs]}


def _env_dict(env: EnvReport) -> dict[str, Any]:
    from vfcheck._frontends.views import report_data

    return {**env.as_dict(), **report_data(env)}


def not_run_message(interrupted: str | None) -> str:
    """Why a unit has no finding: `not run: the run was interrupted (SIGTERM)`."""
    return ("not run: the run was interrupted" + (f" ({interrupted})" if interrupted else "")
            if interrupted else "not run: the run stopped before it")


def write_json(path: Path, report: dict[str, Any], *, indent: bool = True) -> None:
    """`indent`: for people (the final report). A checkpoint is written compact: `indent`
    takes json's pure-Python encoder, eight times slower than its C one (0.12 s for the
    3,000 findings of a 1,000-task check, written again every second of the run)."""
    write_atomically(path, json.dumps(report, indent=2 if indent else None, default=str)
                     + "\n")


def write_junit(path: Path, envs: list[EnvReport], *, interrupted: str | None = None) -> None:
    """JUnit XML for CI UIs: a testsuite per env, a testcase per finding, and a skipped one
    per unit an interrupted run never came to (saying so), so the counts add up."""
    root = ET.Element("testsuites", name="vfcheck")
    if interrupted is not None:
        properties = ET.SubElement(root, "properties")
        ET.SubElement(properties, "property", name="interrupted", value=interrupted)
    for env in envs:
        counts = env.counts()
        suite = ET.SubElement(
            root, "testsuite", name=env.id, tests=str(len(env.findings) + len(env.not_run)),
            failures=str(counts["failed"]), errors=str(counts["error"]),
            skipped=str(counts["skipped"] + len(env.not_run)),
        )
        for f in env.findings:
            case = ET.SubElement(suite, "testcase", classname=env.id, name=node_name(f))
            if (seconds := env.seconds(f)) is not None:
                case.set("time", f"{seconds:.3f}")
            if f.outcome == "failed":
                ET.SubElement(case, "failure", message=f.message.splitlines()[0]).text = f.message
            elif f.outcome == "error":
                ET.SubElement(case, "error", message=f.message.splitlines()[0]).text = f.message
            elif f.outcome in ("skipped", "expected"):  # expected: baselined or allowed
                ET.SubElement(case, "skipped", message=f"{f.outcome}: {f.message}")
        for unit in env.not_run:
            case = ET.SubElement(suite, "testcase", classname=env.id, name=unit)
            ET.SubElement(case, "skipped", message=not_run_message(interrupted))
        from vfcheck._frontends.probe_table import probe_table

        if (table := probe_table(env)) is not None:
            ET.SubElement(suite, "system-out").text = "\n".join(table.lines())
    write_atomically(path, ET.tostring(root, encoding="utf-8", xml_declaration=True))
