"""The reward-probe table: policy x task -> reward, as every report shows it.

The probe families (`reward.*`, `exploit.*`, `judge.*`) put the rewards they read into
their findings' details (`probes`: probe name -> reward). This module folds them into one
table per env: a row per probe policy, a column per sampled task, so a reader sees at a
glance which replies earn what (docs/reward-probes.md: "Reading the probe table").
"""

from __future__ import annotations

from dataclasses import dataclass

from vfcheck.findings import EnvReport


@dataclass
class ProbeTable:
    env_id: str
    tasks: list[int]
    probes: list[str]
    rewards: dict[tuple[str, int], float | None]

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
                fmt(head), *(fmt(r) for r in rows)]

    def as_dict(self) -> dict[str, dict[str, float | None]]:
        """`{probe: {task index: reward}}` for the JSON report."""
        return {p: {str(i): self.rewards[p, i] for i in self.tasks if (p, i) in self.rewards}
                for p in self.probes}


def probe_table(env: EnvReport) -> ProbeTable | None:
    """The env's probe table, or None when no probe family ran."""
    rewards: dict[tuple[str, int], float | None] = {}
    probes: dict[str, None] = {}
    tasks: dict[int, None] = {}
    for finding in env.findings:
        table = finding.details.get("probes")
        if finding.task is None or not isinstance(table, dict):
            continue
        tasks.setdefault(finding.task.index, None)
        for probe, reward in table.items():
            probes.setdefault(probe, None)
            rewards[probe, finding.task.index] = reward
    if not rewards:
        return None
    return ProbeTable(env.id, sorted(tasks), list(probes), rewards)
