"""The outcome grid: an env's findings as family x task, the shape every compact report
shows (the terminal's marks, the Markdown step summary, the HTML matrix).

A cell holds the findings of one family on one task (or on the env as a whole, the `env`
column), in report order; the terminal draws each as a pytest-style mark.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from vfcheck._shared.findings import EnvReport, Finding, Outcome

MARKS: dict[Outcome, str] = {"passed": ".", "failed": "F", "error": "E", "skipped": "s",
                             "expected": "x"}
"""pytest's marks; `expected` (a baselined or allowed finding) is pytest's xfail."""
COUNT_ORDER: tuple[Outcome, ...] = ("failed", "error", "passed", "skipped", "expected")
"""pytest's summary order: what needs attention first."""
_HEX_RUN = re.compile(r"[0-9a-fA-F]{64}")

Column = int | None
"""A task index, or None for the env's own findings."""


def short_key(key: str, limit: int = 32) -> str:
    """A task key fit for a label: a 64-hex hash (verifiers' default `Task.key` is the
    content hash) shows its first 8 characters, and a long key is cut at `limit`."""
    key = _HEX_RUN.sub(lambda hit: hit.group(0)[:8], " ".join(key.split()))
    return key if len(key) <= limit else key[: limit - 1] + "…"


def counts_text(env: EnvReport) -> str:
    """`6 failed, 52 passed, 12 skipped` (`, 75 not run` when the run was cut short), as
    pytest's last line puts it."""
    counts = env.counts()
    parts = [f"{counts[o]} {o}" for o in COUNT_ORDER if counts[o]]
    if env.not_run:  # an interrupted run's report says what it never came to
        parts.append(f"{len(env.not_run)} not run")
    return ", ".join(parts) or "no findings"


def marks_of(findings: list[Finding]) -> str:
    return "".join(MARKS.get(f.outcome, "?") for f in findings)


@dataclass
class OutcomeGrid:
    env_id: str
    families: list[str] = field(default_factory=list)
    columns: list[Column] = field(default_factory=list)
    tasks: dict[int, str] = field(default_factory=dict)
    """Task index -> key, of every task a finding names."""
    cells: dict[tuple[str, Column], list[Finding]] = field(default_factory=dict)

    def cell(self, family: str, column: Column) -> list[Finding]:
        return self.cells.get((family, column), [])

    def column_label(self, column: Column) -> str:
        return "env" if column is None else str(column)

    def legend(self) -> str:
        """`tasks: 0 vfc-echo:hello world · 1 vfc-echo:ping`: what the column numbers are."""
        return "tasks: " + " · ".join(f"{i} {short_key(k)}" for i, k in self.tasks.items())

    def legend_lines(self, width: int = 100, indent: str = "  ") -> list[str]:
        """`legend()` in lines of at most `width` characters, broken between tasks (a task
        longer than a line stands alone), never inside one; continued lines are indented
        under the first task."""
        head = f"{indent}tasks: "
        lines = [head]
        for n, (i, k) in enumerate(self.tasks.items()):
            item = f"{i} {short_key(k)}"
            joined = (" · " if n else "") + item
            if n and len(lines[-1]) + len(joined) > width:
                lines[-1] += " ·"
                lines.append(" " * len(head) + item)
            else:
                lines[-1] += joined
        return lines

    def lines(self, width: int = 100, indent: str = "  ") -> list[str]:
        """The grid as fixed-width text, a row per family, a column per task; columns that
        do not fit in `width` continue in another block below."""
        if not self.families:
            return []
        name_width = max(len("family"), *(len(f) for f in self.families))
        widths = {c: max(len(self.column_label(c)),
                         *(len(marks_of(self.cell(f, c))) for f in self.families))
                  for c in self.columns}
        blocks: list[list[Column]] = [[]]
        used = len(indent) + name_width
        for column in self.columns:
            if blocks[-1] and used + 2 + widths[column] > width:
                blocks.append([])
                used = len(indent) + name_width
            blocks[-1].append(column)
            used += 2 + widths[column]
        lines: list[str] = []
        for block in blocks:
            rows = [["family", *(self.column_label(c) for c in block)]]
            rows += [[f, *(marks_of(self.cell(f, c)) for c in block)] for f in self.families]
            lines += [(indent + "  ".join(
                text.ljust(name_width if i == 0 else widths[block[i - 1]])
                for i, text in enumerate(row))).rstrip() for row in rows]
        return lines


def outcome_grid(env: EnvReport) -> OutcomeGrid:
    """The env's findings by family and task, in report order."""
    grid = OutcomeGrid(env.id)
    columns: set[Column] = set()
    for finding in env.findings:
        column: Column = None if finding.task is None else finding.task.index
        if finding.task is not None:
            grid.tasks.setdefault(finding.task.index, finding.task.key)
        if finding.family not in grid.families:
            grid.families.append(finding.family)
        columns.add(column)
        grid.cells.setdefault((finding.family, column), []).append(finding)
    grid.columns = ([None] if None in columns else []) + sorted(
        c for c in columns if c is not None)
    grid.tasks = dict(sorted(grid.tasks.items()))
    return grid



