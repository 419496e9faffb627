"""What a person reads: rich tables of episodes (and, later, of findings)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.table import Table

if TYPE_CHECKING:
    from vfcheck.runner import RunSummary


def _cell(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


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
            _cell(r.task.key, 32),
            str(r.rollout),
            "-" if reward is None else f"{reward:g}",
            ", ".join(str(t.stop_condition) for t in traces) or "-",
            f"{r.duration:.2f}s",
            _cell("; ".join(errors)) if errors else "",
            style="red" if errors else None,
        )
    return table
