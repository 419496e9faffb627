"""Each family's presentation, one module a family (`_view.FamilyView`): adding one is a
module here, found as the check families are (every module without a leading `_`), listed
in the order of the families it shows. The front ends ask these functions and name no
family."""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from vfcheck._frontends.views._view import VIEWS, FamilyView
from vfcheck.checks import REGISTRY
from vfcheck.checks._discovery import family_modules

if TYPE_CHECKING:
    from vfcheck._options.resolved import CheckOptions
    from vfcheck._shared.findings import EnvReport

for _name in family_modules(__name__, __path__):
    importlib.import_module(_name)


def _order(declared: FamilyView) -> float:
    known = [REGISTRY.family(f).order for f in declared.families if f in REGISTRY.families]
    return min(known, default=float("inf"))


VIEWS.sort(key=_order)


def episode_linked(family: str) -> bool:
    """Whether `family`'s findings on a task link to that task's episode."""
    return any(family in v.families and v.episode_link for v in VIEWS)


def summary_lines(report: EnvReport) -> list[str]:
    """Every view's summary lines for one env, in view order."""
    return [line for v in VIEWS if v.summary is not None for line in v.summary(report)]


def warnings(report: EnvReport, options: CheckOptions) -> list[str]:
    return [line for v in VIEWS if v.warning is not None
            if (line := v.warning(report, options)) is not None]


def sections(reports: Sequence[EnvReport], options: CheckOptions) -> list[tuple[str, list[str]]]:
    """pytest's summary sections of the views: (title, lines), the warnings last in their
    view's section."""
    found = []
    for v in VIEWS:
        lines = [line for r in reports for line in (v.summary(r) if v.summary else [])]
        lines += [line for r in reports if v.warning is not None
                  if (line := v.warning(r, options)) is not None]
        if v.title and lines:
            found.append((v.title, lines))
    return found


def header_lines(options: CheckOptions, families: Iterable[str]) -> list[str]:
    """The header lines of the views whose families run."""
    running = set(families)
    return [v.header(options) for v in VIEWS if v.header is not None
            and running & set(v.families)]


def report_data(report: EnvReport) -> dict[str, Any]:
    """What the views add to the env's entry of the JSON report."""
    return dict(item for v in VIEWS if v.data is not None
                if (item := v.data(report)) is not None)


__all__ = ["FamilyView", "episode_linked", "header_lines", "report_data", "sections",
           "summary_lines", "warnings"]
