"""The reward probes' presentation (`reward`, `exploit`, `judge`): the table of what each
probe earned per task, under the env's findings, in pytest's summary and in the JSON report;
their findings link to the task's episode."""

from __future__ import annotations

from typing import Any

from vfcheck._frontends.probe_table import probe_table
from vfcheck._frontends.views._view import FamilyView, view
from vfcheck._shared.findings import EnvReport


def table_lines(report: EnvReport) -> list[str]:
    return table.lines() if (table := probe_table(report)) is not None else []


def table_data(report: EnvReport) -> tuple[str, Any] | None:
    return ("reward_probes", table.as_dict()) if (table := probe_table(report)) else None


view(FamilyView(("reward", "exploit", "judge"), title="reward probes", summary=table_lines,
                data=table_data, episode_link=True))
