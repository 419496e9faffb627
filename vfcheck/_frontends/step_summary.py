"""The Markdown summary a GitHub Actions job shows on its page: counts per env, each env's
outcome grid and its failures, appended to the file `$GITHUB_STEP_SUMMARY` names.

GitHub renders the summary as Markdown with HTML allowed, so env text is HTML-escaped and
kept out of table syntax (`|`, line breaks).
"""

from __future__ import annotations

import html
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from vfcheck._frontends.outcome_grid import COUNT_ORDER, counts_text, marks_of, outcome_grid
from vfcheck._frontends.report import node_name, short_message
from vfcheck._shared.findings import EnvReport

STEP_SUMMARY_VAR = "GITHUB_STEP_SUMMARY"
SHOWN_FAILURES = 30
"""Failures listed per env; the rest are counted (the full list is in the reports)."""


def _text(value: str, limit: int = 300) -> str:
    """`value` safe in a Markdown table cell or list item."""
    value = " ".join(value.split())
    if len(value) > limit:
        value = value[: limit - 1] + "…"
    return html.escape(value).replace("|", "\\|")


def summary_markdown(reports: Sequence[EnvReport], interrupted: str | None = None) -> str:
    lines = ["## vfcheck", ""]
    if interrupted is not None:
        not_run = sum(len(env.not_run) for env in reports)
        lines += [f"> **Interrupted ({interrupted}): this summary is partial**; "
                  f"{not_run} check(s) not run.", ""]
    lines += [
             "| env | " + " | ".join(COUNT_ORDER) + " |",
             "|---|" + "---:|" * len(COUNT_ORDER)]
    for env in reports:
        counts = env.counts()
        lines.append(f"| {_text(env.id)} | " + " | ".join(str(counts[o]) for o in COUNT_ORDER)
                     + " |")
    for env in reports:
        grid = outcome_grid(env)
        lines += ["", f"### {_text(env.id)}: {counts_text(env)}", ""]
        if grid.families:
            lines += ["| family | " + " | ".join(grid.column_label(c) for c in grid.columns)
                      + " |", "|---|" + "---|" * len(grid.columns)]
            lines += [f"| {_text(family)} | " + " | ".join(
                f"`{marks}`" if (marks := marks_of(grid.cell(family, c))) else ""
                for c in grid.columns) + " |" for family in grid.families]
        if grid.tasks:
            lines += ["", _text(grid.legend(), 2000)]
        bad = [f for f in env.findings if f.bad]
        if bad:
            lines += ["", "**Failures and errors**", ""]
            lines += [f"- `{_text(node_name(f))}` {f.outcome}: {_text(short_message(f))}"
                      for f in bad[:SHOWN_FAILURES]]
            if len(bad) > SHOWN_FAILURES:
                lines.append(f"- … and {len(bad) - SHOWN_FAILURES} more (see the reports)")
    return "\n".join(lines) + "\n"


def check_step_summary(environ: Mapping[str, str] | None = None) -> None:
    """Raise `OptionError` (a usage error, before any work) when `$GITHUB_STEP_SUMMARY`
    names a file that cannot be written."""
    from vfcheck._options.table import OptionError
    from vfcheck._shared.paths import unwritable

    target = (os.environ if environ is None else environ).get(STEP_SUMMARY_VAR)
    if target and (problem := unwritable(Path(target).absolute())) is not None:
        raise OptionError(f"environment variable {STEP_SUMMARY_VAR}: cannot write "
                          f"{Path(target).absolute()}: {problem}")


def append_step_summary(reports: Sequence[EnvReport],
                        environ: Mapping[str, str] | None = None, *,
                        interrupted: str | None = None) -> Path | None:
    """Append the summary to `$GITHUB_STEP_SUMMARY` when it is set; the file, or None.
    A summary that cannot be written is a warning on stderr, never a failed run."""
    import sys

    target = (os.environ if environ is None else environ).get(STEP_SUMMARY_VAR)
    if not target or not reports:
        return None
    path = Path(target)
    try:
        with path.open("a", encoding="utf-8") as out:
            out.write(summary_markdown(reports, interrupted) + "\n")
    except OSError as e:
        print(f"vfcheck: cannot append the step summary to {path}: {e}", file=sys.stderr)
        return None
    return path
