"""The checks: the plug-in API, and the built-in families that use it.

A family is one module: every module of this package whose name has no leading `_` is
imported, and so is every module a distribution names in the entry-point group
`vfcheck.checks` (a user's own checks; see docs/write-your-own-check.md). A family module
declares its family once (`family(name, order=..., summary=...)`) and registers its checks
(`@check(...)`); nothing else lists it. The registry is what `vfcheck list-checks` prints,
what the docs' catalogue is generated from, and what the worker runs. Nothing here imports
verifiers.

A plug-in that fails to import is not a traceback in every command: its one-line reason is
kept in `REGISTRY.plugin_errors`, and the front ends refuse the run with it, as they refuse
a bad option.
"""

from __future__ import annotations

from collections.abc import Sequence

from vfcheck._shared.findings import Finding, Outcome, TaskId
from vfcheck.checks._context import CheckContext
from vfcheck.checks._discovery import ENTRY_POINT_GROUP, discover
from vfcheck.checks._lab import play_reply
from vfcheck.checks._registry import (
    REGISTRY,
    CheckSpec,
    Family,
    Scope,
    Unit,
    check,
    family,
)

discover(__name__, __path__)

CATALOGUE: tuple[CheckSpec, ...] = tuple(REGISTRY)
"""Every registered check, in report order."""
BY_ID: dict[str, CheckSpec] = {spec.id: spec for spec in CATALOGUE}
"""The registered checks by id."""
FAMILIES: tuple[str, ...] = REGISTRY.families
"""The families, in the order the report lists them."""


def select(families: Sequence[str] | None) -> tuple[CheckSpec, ...]:
    """The checks of `families` (exact names; `load` always runs: the rest needs it)."""
    return REGISTRY.select(families)


__all__ = ["BY_ID", "CATALOGUE", "ENTRY_POINT_GROUP", "FAMILIES", "REGISTRY", "CheckContext",
           "CheckSpec", "Family", "Finding", "Outcome", "Scope", "TaskId", "Unit", "check",
           "family", "play_reply", "select"]
