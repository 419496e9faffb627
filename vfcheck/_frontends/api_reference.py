"""The API reference page, rendered from the public names: `vfcheck.__all__` and
`vfcheck.checks.__all__` (the plug-in API). docs/reference/api.md holds it between
`<!-- api:start -->` and `<!-- api:end -->` (`scripts/regen-reference` writes it, a test
holds the page to it), so a public name cannot be added, dropped or left undocumented
without the page saying so."""

from __future__ import annotations

import ast
import importlib
import inspect
import itertools
from pathlib import Path
from typing import Any

PUBLIC_MODULES = ("vfcheck", "vfcheck.checks")
START, END = "<!-- api:start -->", "<!-- api:end -->"


def public_names(module_name: str) -> list[tuple[str, Any]]:
    module = importlib.import_module(module_name)
    return [(name, getattr(module, name)) for name in module.__all__]


def summary(text: str | None) -> str:
    """A docstring's first paragraph, on one line."""
    return " ".join((text or "").strip().split("\n\n", 1)[0].split())


def attribute_doc(value_module: str, name: str) -> str | None:
    """The docstring written under `name = ...` in `value_module`'s source (a constant or an
    alias has no `__doc__` of its own)."""
    path = importlib.import_module(value_module).__file__
    if path is None:
        return None
    body = ast.parse(Path(path).read_text()).body
    for node, after in itertools.pairwise(body):
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, ast.AnnAssign) else [])
        if any(isinstance(t, ast.Name) and t.id == name for t in targets) and isinstance(
                after, ast.Expr) and isinstance(after.value, ast.Constant):
            return str(after.value.value)
    return None


def defined_in(module_name: str, name: str, value: Any) -> str:
    """Where `name` is defined: the value's module for classes and functions, else the
    module that assigns it (found in the sources of its imports)."""
    if inspect.isclass(value) or inspect.isfunction(value):
        return str(value.__module__)
    module = importlib.import_module(module_name)
    lazy = getattr(module, "_PUBLIC", {}).get(name)
    candidates = [lazy] if lazy else []
    candidates.append(module_name)
    for candidate in candidates:
        if attribute_doc(candidate, name) is not None:
            return str(candidate)
    tree = ast.parse(Path(str(module.__file__)).read_text())
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and any(
                alias.name == name for alias in node.names):
            return node.module
    return module_name


def describe(module_name: str, name: str, value: Any) -> tuple[str, str]:
    """(heading line, summary) of one public name; the summary is empty when undocumented."""
    if inspect.isfunction(value):
        signature = str(inspect.signature(value)).replace("'", "")
        return f"`{name}{signature}`", summary(inspect.getdoc(value))
    if inspect.isclass(value):
        own = value.__doc__ if "__doc__" in vars(value) else None
        if own and own.startswith(f"{value.__name__}("):  # a dataclass's generated one
            own = None
        return f"class `{name}`", summary(own)
    home = defined_in(module_name, name, value)
    return f"`{name}`", summary(attribute_doc(home, name))


def markdown() -> str:
    lines: list[str] = []
    for module_name in PUBLIC_MODULES:
        lines += [f"## `{module_name}`", ""]
        for name, value in public_names(module_name):
            heading, text = describe(module_name, name, value)
            lines += [f"### {heading}", "", text or "(undocumented)", ""]
    return "\n".join(lines).strip()


def undocumented() -> list[str]:
    """Public names without a summary: each needs a docstring where it is defined."""
    return [f"{module}.{name}" for module in PUBLIC_MODULES
            for name, value in public_names(module) if not describe(module, name, value)[1]]


def page_block(text: str) -> str | None:
    if START not in text or END not in text:
        return None
    return text.split(START, 1)[1].split(END, 1)[0].strip()
