"""The names a check run takes from the user, held to the registry before any work: the
families of `--checks`, the checks `allow` patterns name, and the check plug-ins that
failed to import. The options cannot do it themselves: the registry is above them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from vfcheck._options.option import OptionError

if TYPE_CHECKING:
    from vfcheck._options.resolved import Resolved


def check_registry_names(found: Resolved) -> None:
    """Raise OptionError for a plug-in that failed to import, an unknown family or an
    `allow` pattern that names no check (each with "did you mean")."""
    from vfcheck.checks import REGISTRY

    if REGISTRY.plugin_errors:
        raise OptionError(REGISTRY.plugin_errors[0])
    found.check_names(REGISTRY.families, [spec.id for spec in REGISTRY])
