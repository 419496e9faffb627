"""What a family shows besides its findings, declared once by the family's view module: its
summary lines under an env's findings (the terminal report, and pytest's summary section
`title`), a loud warning, its line in the run's header, its data in the JSON report, and
whether its findings link to their task's episode in the HTML report."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vfcheck._options.resolved import CheckOptions
    from vfcheck._shared.findings import EnvReport


@dataclass(frozen=True)
class FamilyView:
    families: tuple[str, ...]
    title: str = ""
    """pytest's summary section of the `summary` lines (`vfcheck <title>`)."""
    summary: Callable[[EnvReport], list[str]] | None = None
    warning: Callable[[EnvReport, CheckOptions], str | None] | None = None
    """A line said loudly after the run (the terminal's closing lines, pytest's section)."""
    header: Callable[[CheckOptions], str] | None = None
    """Its line in the run's header, when one of `families` runs."""
    data: Callable[[EnvReport], tuple[str, Any] | None] | None = None
    """`(key, value)` added to the env's entry of the JSON report."""
    episode_link: bool = False
    """Its findings on a task link to that task's episode (the HTML report)."""


VIEWS: list[FamilyView] = []
"""Every declared view, in the order of their families (`vfcheck._frontends.views`)."""


def view(declared: FamilyView) -> FamilyView:
    VIEWS.append(declared)
    return declared
