"""The env suite's checks: one module per family, each check a registered function.

Importing this package registers every family, in report order (`vfcheck.checks.registry`
holds the registry; a family module registers its checks with `@check(...)`). The registry
is what `vfcheck list-checks` prints, what the docs' catalogue is generated from, and what
the worker runs. Nothing here imports verifiers.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from vfcheck.checks.registry import REGISTRY, CheckSpec, Scope, Unit, check
from vfcheck.family_names import FAMILY_NAMES

FAMILY_MODULES: tuple[str, ...] = (
    "load", "validate", "episode", "lifecycle", "preview", "robustness", "replay", "golden",
    "reward", "exploit", "judge", "served", "hygiene", "network",
)
"""The family modules under `vfcheck.checks`, in report order: importing one registers its
checks. A new family is one module here, its fixture env and its test."""
for _module in FAMILY_MODULES:
    importlib.import_module(f"{__name__}.{_module}")

CATALOGUE: tuple[CheckSpec, ...] = tuple(REGISTRY)
BY_ID: dict[str, CheckSpec] = {spec.id: spec for spec in CATALOGUE}
FAMILIES: tuple[str, ...] = REGISTRY.families
"""Env-suite families, in the order the report lists them."""
if FAMILIES != FAMILY_NAMES:  # what the option table validates `--checks` against
    raise RuntimeError(f"vfcheck.family_names.FAMILY_NAMES {FAMILY_NAMES} is not the "
                       f"registry's families {FAMILIES}: write a new family's name there")


def select(families: Sequence[str] | None) -> tuple[CheckSpec, ...]:
    """The checks of `families` (exact names; `load` always runs: the rest needs it)."""
    return REGISTRY.select(families)


__all__ = ["BY_ID", "CATALOGUE", "FAMILIES", "REGISTRY", "CheckSpec", "Scope", "Unit", "check",
           "select"]
