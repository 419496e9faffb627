"""What a harness program's zygote imports before it forks: the modules its script imports.

A harness program (`python prog.py`, a PEP 723 script in its own uv environment) spends most
of its start importing its dependencies (verifiers 0.4.0's chat program: openai, httpx,
anyio, tenacity, and mcp once it calls a tool; ~1.2 s of CPU here) before its first model
request. Its zygote (`vfcheck._host.zygote`) imports those once. Which ones is read from the
script's source (`ast`), never by running it: every absolute import, at module level or in a
function (a lazy one is imported by the children that reach it, so importing it once saves
them that), except what only a type checker reads (`if TYPE_CHECKING:`) and what the
script's own folder holds (its child imports that itself, from the files as they are then).

Standard library only: it runs in the harness program's interpreter, where vfcheck's
dependencies are not installed.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import sys


def imported_names(source: str | bytes) -> list[str]:
    """The modules `source` imports, in the order written, each once: `import a.b` names
    `a.b`; `from a.b import c` names `a.b` and `a.b.c` (which may be a module)."""
    names: dict[str, None] = {}

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and _type_checking(node.test):
                visit(node.orelse)
                continue
            if isinstance(node, ast.Import):
                names.update((alias.name, None) for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names[node.module] = None
                names.update((f"{node.module}.{alias.name}", None) for alias in node.names
                             if alias.name != "*")
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                inner = getattr(node, field, None)
                if isinstance(inner, list):
                    visit([n for n in inner if isinstance(n, ast.stmt)]
                          + [s for n in inner if not isinstance(n, ast.stmt)
                             for s in getattr(n, "body", [])])

    try:
        visit(ast.parse(source).body)
    except (SyntaxError, ValueError, RecursionError):
        return []  # the child says what is wrong with the script, as a cold start would
    return list(names)


def _type_checking(test: ast.expr) -> bool:
    """`if TYPE_CHECKING:` or `if typing.TYPE_CHECKING:`."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def preload_script(path: str) -> list[str]:
    """Import what the script at `path` imports, with `sys.path[0]` its folder as for its
    children; the names that failed (a module the script's own folder holds is skipped)."""
    folder = os.path.dirname(os.path.realpath(path))
    if sys.path and not sys.flags.safe_path:
        sys.path[0] = folder  # `-c` put the working directory there
    try:
        with open(path, "rb") as f:
            names = imported_names(f.read())
    except OSError:
        return []
    failed = []
    for name in names:
        top = name.partition(".")[0]
        parent, _, last = name.rpartition(".")
        if name in sys.modules or (parent in sys.modules
                                   and hasattr(sys.modules[parent], last)):
            continue  # imported, or a name `from parent import last` reads
        if _local(top, folder):
            continue
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - `from a import c` where c is a name, not a module
            failed.append(name)
    return failed


def _local(top: str, folder: str) -> bool:
    """Whether the top-level module `top` would be found in the script's own folder (or
    nowhere): the script's children import it themselves."""
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return True
    if spec is None:
        return True
    where = spec.origin if spec.origin not in (None, "built-in", "frozen") else None
    places = [where] if where else list(spec.submodule_search_locations or [])
    return any(os.path.realpath(p).startswith(folder + os.sep) for p in places if p)
