"""What a run's reader needs after the marks: a loud word when the env's golden traces
were looked for in the wrong place, and the closing lines that say what to do next (the
command that records missing golden traces, the allow entries in force and where they are
set, the reports written). Both front ends print them; why findings were skipped or
expected is `vfcheck._frontends.report.explained`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from vfcheck._frontends.report import explained
from vfcheck._frontends.views import sections
from vfcheck._frontends.views.golden import golden_not_found
from vfcheck._shared.findings import EnvReport

if TYPE_CHECKING:
    from vfcheck._options.resolved import CheckOptions, RunOptions


def closing_lines(reports: Sequence[EnvReport], options: CheckOptions, run: RunOptions, *,
                  pytest: bool = False) -> list[str]:
    """What to do next: the command that records each env's missing golden traces (or
    updates changed ones), the allow entries in force and where they are set, and the
    reports this run wrote. Always at least one line, and the first says what follows from
    the findings: a run cut short is run again, failures are fixed before golden traces are
    recorded, errors are named as errors (not as failures)."""
    lines: list[str] = []
    first = first_step(reports)
    then = "next" if first is None else "then"
    for report in reports:
        actions = [(f.details.get("golden") or {}).get("action") for f in report.findings
                   if f.check == "golden"]
        missing, changed = actions.count("missing"), actions.count("mismatch")
        if missing and golden_not_found(report, options) is not None:
            lines.append(f"{then}: run vfcheck where {report.id}'s golden traces are (see the "
                         "warning above) before recording any")
        elif missing or changed:
            what = " and ".join(
                part for part in (f"record {missing} missing" if missing else "",
                                  f"update {changed} changed" if changed else "") if part)
            lines.append(f"{then}: {what} golden trace(s) of {report.id} (when intended): "
                         f"{options.record_golden_command(report.id, pytest=pytest)}")
    if options.allow:
        by_where: dict[str, list[str]] = {}
        for pattern in options.allow:
            by_where.setdefault(options.allow_from.get(pattern, "the options"), []).append(
                pattern)
        lines.append("allowed: " + "; ".join(f"{', '.join(patterns)} (set in {where})"
                                             for where, patterns in by_where.items()))
    written = [(name, getattr(run, attr)) for name, attr in
               (("HTML report", "html"), ("JSON report", "json"), ("JUnit XML", "junit_xml"))
               if getattr(run, attr)]
    if written:
        lines.append("reports: " + ", ".join(f"{name} {Path(path).resolve()}"
                                             for name, path in written))
    if first is not None:
        lines.insert(0, first)
    elif not any(line.startswith("next:") for line in lines):
        lines.insert(0, "next: nothing to do" + ("" if options.allow else
                                                " (every finding passed or is explained "
                                                "above)"))
    return lines


def first_step(reports: Sequence[EnvReport]) -> str | None:
    """The step that comes before any other, or None: the run was cut short (checks not
    run), checks failed, or findings could not be judged (errors)."""
    not_run = sum(len(report.not_run) for report in reports)
    failed = sum(1 for r in reports for f in r.findings if f.outcome == "failed")
    errors = sum(1 for r in reports for f in r.findings if f.outcome == "error")
    if not_run:
        return (f"next: the run was cut short before {not_run} check(s) ran: its verdict is "
                "partial; run the rerun line again"
                + (f" (and fix the {failed} failure(s) above)" if failed else ""))
    if failed:
        return "next: fix the failures above, then run the rerun line again"
    if errors:
        return (f"next: {errors} finding(s) could not be judged (the errors above): fix what "
                "they name, then run the rerun line again")
    return None


def pytest_sections(reports: Sequence[EnvReport], options: CheckOptions, run: RunOptions
                    ) -> list[tuple[str, list[str]]]:
    """pytest's terminal summary of vfcheck, as (title, lines) sections."""
    from vfcheck._host.warm_plan import starts_line

    why = [line for report in reports for line in explained(report, options.allow_from)]
    starts = [f"{report.id} {starts_line(report.starts)}" for report in reports
              if report.starts]  # how verifiers' processes started (`vfcheck._host.warm_starts`)
    found = [*sections(reports, options),  # each family's own (`vfcheck._frontends.views`)
             ("skipped and expected", why), ("process starts", starts),
             ("next", closing_lines(reports, options, run, pytest=True))]
    return [(title, lines) for title, lines in found if lines]
