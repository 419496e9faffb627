"""What `vfcheck run` prints: one row per episode it played."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.table import Table

from vfcheck.frontends.report import table_cell

if TYPE_CHECKING:
    from vfcheck.episodes.runner import RunSummary


def episode_table(summary: RunSummary) -> Table:
    """One row per episode: task, rollout, reward, stop condition, errors."""
    table = Table(title=f"{summary.env_id}: {len(summary.results)} episode(s)")
    for column in ("task", "key", "rollout", "reward", "stop", "time", "errors"):
        table.add_column(column, overflow="fold")
    for r in summary.results:
        traces = r.traces
        reward = r.reward
        errors = r.errors()
        table.add_row(
            str(r.task.index),
            table_cell(r.task.key, 32),
            str(r.rollout),
            "-" if reward is None else f"{reward:g}",
            ", ".join(str(t.stop_condition) for t in traces) or "-",
            f"{r.duration:.2f}s",
            table_cell("; ".join(errors)) if errors else "",
            style="red" if errors else None,
        )
    return table
