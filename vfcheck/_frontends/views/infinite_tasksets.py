"""`load`'s presentation: an infinite taskset that no `-n` bounded was checked on its first
`--sample` tasks; the env's section says so in one line (the run's header is printed
before any env has loaded, so it cannot), and the JSON report holds the bound."""

from __future__ import annotations

from typing import Any

from vfcheck._frontends.views._view import FamilyView, view
from vfcheck._shared.findings import EnvReport


def _bound(report: EnvReport) -> dict[str, Any] | None:
    for finding in report.findings:
        if finding.check == "load" and isinstance(bound := finding.details.get("infinite"),
                                                  dict):
            return bound
    return None


def sampled_line(report: EnvReport) -> list[str]:
    """`vfc-infinite tasks: the first 3 of VfcInfiniteTaskset, an infinite taskset ...`."""
    if (bound := _bound(report)) is None:
        return []
    return [f"{report.id} tasks: the first {bound.get('loaded')} of {bound.get('taskset')}, "
            "an infinite taskset (the sample; -n N bounds the load)"]


def sampled_data(report: EnvReport) -> tuple[str, Any] | None:
    return None if (bound := _bound(report)) is None else ("infinite_taskset", bound)


view(FamilyView(("load",), title="tasks", summary=sampled_line, data=sampled_data))
