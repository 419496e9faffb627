"""Finding the families: the modules of a package, and the entry points of installed ones.

A family is found, never listed: a built-in one is a module of `vfcheck.checks` without a
leading `_` (helpers have one), a user's is a module named in the entry-point group
`vfcheck.checks` of its distribution's metadata, as pytest finds `pytest11` plug-ins:

    [project.entry-points."vfcheck.checks"]
    my-checks = "my_env_checks"

Importing a family module registers its family and checks. A plug-in that cannot be
imported, or registers what clashes with a built-in, is one line in
`REGISTRY.plugin_errors`; the built-in families still load.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from importlib.metadata import EntryPoint, entry_points

from vfcheck.checks._registry import REGISTRY

ENTRY_POINT_GROUP = "vfcheck.checks"
"""The entry-point group a distribution names its check modules in."""


def family_modules(package: str, path: Iterable[str]) -> list[str]:
    """The dotted names of `package`'s family modules (no leading `_`), sorted."""
    return sorted(f"{package}.{info.name}" for info in pkgutil.iter_modules(list(path))
                  if not info.name.startswith("_"))


def discover(package: str, path: Iterable[str]) -> None:
    """Import the built-in family modules of `package`, then the plug-ins' modules."""
    for name in family_modules(package, path):
        importlib.import_module(name)
    for point in plugin_entry_points():
        load_plugin(point)


def plugin_entry_points() -> list[EntryPoint]:
    """The `vfcheck.checks` entry points of the installed distributions, one per module."""
    found = {point.value: point for point in entry_points(group=ENTRY_POINT_GROUP)}
    return sorted(found.values(), key=lambda point: point.value)


def load_plugin(point: EntryPoint) -> None:
    """Import one plug-in; why it could not be is kept, never raised (`plugin_errors`)."""
    try:
        point.load()
    except BaseException as e:
        if isinstance(e, KeyboardInterrupt):
            raise
        dist = f" of {point.dist.name}" if point.dist is not None else ""
        REGISTRY.plugin_errors.append(
            f"the check plug-in {point.value!r} (entry point {point.name!r}{dist}, group "
            f"{ENTRY_POINT_GROUP!r}) failed to import: {type(e).__name__}: {e}")
