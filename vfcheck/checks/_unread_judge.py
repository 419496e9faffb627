"""A verdict that rests on a judge vfcheck could not answer in its own format is no verdict.

Where the env's judge reads none of the formats vfcheck found in its prompt (its own
`parse` refused each, `vfcheck._model.judge_parse`), every episode it scores errors in the
judge's parser or scores a reply the mock had to make up: a failure then is vfcheck's, not
the env's. Such a finding is skipped, naming the judge class, its prompt's line and what was
tried; a `judge.*` pass is skipped too (it compared verdicts the judge never read).
"""

from __future__ import annotations

from vfcheck._model.judge_parse import unreadable_judge
from vfcheck._shared.findings import Finding

__all__ = ["unless_judge_unread"]

CALLS_NOT_VERDICTS = frozenset({"judge.skipped"})
"""Checks whose verdict is whether the judge is called at all, never what it said."""


def unless_judge_unread(finding: Finding) -> Finding:
    """`finding`, or a skip naming the unreadable judge of its task when it rests on it."""
    if finding.outcome not in ("failed", "passed") or (
            finding.outcome == "passed" and finding.family != "judge") or (
            finding.check in CALLS_NOT_VERDICTS):
        return finding
    why = unreadable_judge(finding.task.index if finding.task is not None else None)
    if why is None:
        return finding
    where = finding.message.split(": ", 1)[0]
    return Finding(finding.check, finding.family, finding.task, "skipped",
                   f"{where}: {finding.check} needs the judge's verdict, and {why} (not a "
                   "verdict on the env)",
                   {**finding.details, "unjudged": {"outcome": finding.outcome,
                                                    "message": finding.message}})
