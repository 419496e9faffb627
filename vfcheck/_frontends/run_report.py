"""What `vfcheck run` prints: one row per episode it played."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.table import Table

from vfcheck._frontends.report import table_cell

if TYPE_CHECKING:
    from vfcheck._episodes.runner import RunSummary


def episode_table(summary: RunSummary) -> Table:
    """One row per episode: task, rollout, reward, stop condition, errors (a column only
    when an episode has some). Numbers never wrap; keys and errors wrap at words, and a
    word too long for its column is cut with an ellipsis, never broken mid-word."""
    table = Table(title=f"{summary.env_id}: {len(summary.results)} episode(s)",
                  title_justify="left")
    any_errors = any(r.errors() for r in summary.results)
    for column in ("task", "key", "rollout", "reward", "stop", "time",
                   *(["errors"] if any_errors else [])):
        table.add_column(column, overflow="ellipsis",
                         no_wrap=column not in ("key", "stop", "errors"))
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
            *([table_cell("; ".join(errors)) if errors else ""] if any_errors else []),
            style="red" if errors else None,
        )
    return table
