"""The reward-probe table: policy x task -> reward, as every report shows it.

The probe families (`reward.*`, `exploit.*`, `judge.*`) put the rewards they read into
their findings' details (`probes`: probe name -> reward). This module folds them into one
table per env: a row per probe policy, a column per sampled task, so a reader sees at a
glance which replies earn what (docs/reward-probes.md: "Reading the probe table"), followed
by the notes that make its cells readable: the format each task's oracle was played in, the
labels each judge was answered in, and why a `-` cell was not scored.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vfcheck._shared.findings import EnvReport


@dataclass
class ProbeTable:
    env_id: str
    tasks: list[int]
    probes: list[str]
    rewards: dict[tuple[str, int], float | None]
    formats: dict[int, str] = field(default_factory=dict)
    """Task index -> the format its oracle was played in."""
    judges: dict[str, str] = field(default_factory=dict)
    """Judge (model name) -> the labels it was answered in, and where they came from."""
    errors: dict[tuple[str, int], str] = field(default_factory=dict)
    """(probe, task) -> why the cell is `-`."""

    def cell(self, probe: str, task: int) -> str:
        if (probe, task) not in self.rewards:
            return ""
        value = self.rewards[probe, task]
        return "-" if value is None else f"{value:g}"

    def lines(self) -> list[str]:
        """The table as fixed-width text (pytest's terminal summary, JUnit system-out)."""
        head = ["probe", *(f"task {i}" for i in self.tasks)]
        rows = [[p, *(self.cell(p, i) for i in self.tasks)] for p in self.probes]
        widths = [max(len(r[c]) for r in [head, *rows]) for c in range(len(head))]

        def fmt(row: list[str]) -> str:
            return "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip()

        return [f"{self.env_id} reward probes (policy x task -> reward; '-' = not scored):",
                fmt(head), *(fmt(r) for r in rows), *self.notes()]

    def notes(self) -> list[str]:
        """The lines under the table: oracle formats, judge labels, unscored cells."""
        lines = []
        if self.formats:
            lines.append("oracle format: " + ", ".join(
                f"task {i} {f}" for i, f in sorted(self.formats.items())))
        lines += [f"judge {name!r} answered in {labels}" for name, labels in self.judges.items()]
        by_error: dict[str, list[str]] = {}
        for (probe, task), error in self.errors.items():
            by_error.setdefault(f"{probe}: {error}", []).append(str(task))
        lines += [f"- {what} (task {', '.join(tasks)})" for what, tasks in by_error.items()]
        return lines

    def as_dict(self) -> dict[str, dict[str, float | None]]:
        """`{probe: {task index: reward}}` for the JSON report."""
        return {p: {str(i): self.rewards[p, i] for i in self.tasks if (p, i) in self.rewards}
                for p in self.probes}


def probe_table(env: EnvReport) -> ProbeTable | None:
    """The env's probe table, or None when no probe family ran."""
    rewards: dict[tuple[str, int], float | None] = {}
    probes: dict[str, None] = {}
    tasks: dict[int, None] = {}
    formats: dict[int, str] = {}
    judges: dict[str, str] = {}
    errors: dict[tuple[str, int], str] = {}
    for finding in env.findings:
        details = finding.details
        table = details.get("probes")
        if finding.task is None or not isinstance(table, dict):
            continue
        index = finding.task.index
        tasks.setdefault(index, None)
        for probe, reward in table.items():
            probes.setdefault(probe, None)
            rewards[probe, index] = reward
        if isinstance(details.get("oracle_format"), str):
            formats[index] = details["oracle_format"]
        judges.update(details.get("judge_labels") or {})
        for probe, error in (details.get("probe_errors") or {}).items():
            errors[probe, index] = str(error)
    if not rewards:
        return None
    return ProbeTable(env.id, sorted(tasks), list(probes), rewards, formats, judges, errors)
