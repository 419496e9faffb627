"""The public API is the names `vfcheck` and `vfcheck.checks` export: each resolves, is
documented where it is defined, is typed for type checkers (the lazy names of `vfcheck`
are imported under `TYPE_CHECKING`), and docs/reference/api.md is their rendering."""

from __future__ import annotations

import ast
import importlib

import pytest
from support import DOCS, SOURCE

from vfcheck._frontends.api_reference import (
    PUBLIC_MODULES,
    markdown,
    page_block,
    undocumented,
)


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_every_public_name_resolves(module_name: str) -> None:
    module = importlib.import_module(module_name)
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert missing == [], f"{module_name}.__all__ names what it does not have: {missing}"
    assert len(set(module.__all__)) == len(module.__all__)


def test_every_public_name_is_documented() -> None:
    assert undocumented() == [], "write a docstring where each of these is defined"


def test_the_api_page_is_the_public_names() -> None:
    block = page_block((DOCS / "reference" / "api.md").read_text())
    assert block is not None, "docs/reference/api.md lost its <!-- api:start/end --> markers"
    assert block == markdown(), (
        "docs/reference/api.md drifted: run `python scripts/regen-reference`")


def test_type_checkers_see_every_lazy_name() -> None:
    """`vfcheck.__getattr__` loads the names at run time; a type checker reads the
    `if TYPE_CHECKING:` imports instead, and must find each of them there."""
    import vfcheck

    tree = ast.parse((SOURCE / "__init__.py").read_text())
    typed = {alias.asname or alias.name for node in ast.walk(tree)
             if isinstance(node, ast.If) and isinstance(node.test, ast.Name)
             and node.test.id == "TYPE_CHECKING"
             for stmt in node.body if isinstance(stmt, ast.ImportFrom) for alias in stmt.names}
    lazy = set(vfcheck._PUBLIC)
    assert lazy <= typed, f"not imported under TYPE_CHECKING: {sorted(lazy - typed)}"
    assert set(vfcheck.__all__) == lazy | {"__version__"}

