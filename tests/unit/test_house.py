"""House rules read from the source: vfcheck's import graph has no cycle, its layers are the ones
docs/architecture.md draws, and no module is long. A cycle hidden in function-level imports still
decides which module must be imported first and makes every part of it move together; a long module
holds several jobs.

The graph is built with `ast`, without importing anything (no verifiers, no vfcheck).
Edges are what Python does when the import statement runs:
- `import a.b.c` and `from a.b.c import x` run `a.b/__init__` (unless the importer is
  inside `a.b`: its packages were imported first) and `a.b.c`;
- `from a.b import c` with `a.b.c` a module is an edge to `a.b.c`; with `c` a name, to
  `a.b/__init__` (even from inside `a.b`: it reads the package's names);
- relative imports resolve against the importer's package;
- every import counts: module-level, function-level, under `if TYPE_CHECKING` (a cycle
  of types is still a cycle in the design).
`importlib.import_module` calls are not followed, except discovery: a package whose
`__init__` discovers its modules (`discover(__name__, __path__)`, `family_modules(...)`:
`vfcheck.checks`, `vfcheck._frontends.views`) imports each of them without a leading `_`
(each is an edge).
"""

from __future__ import annotations

import ast
import itertools
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import SOURCE

MAX_LINES = 550


@dataclass(frozen=True)
class Edge:
    target: str
    line: int


def modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every `.py` under the package folder `root`."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool,
              known: dict[str, Path]) -> Iterator[tuple[str, bool]]:
    """(module run, explicit?) for one statement: explicit when the importer reads its
    names, implicit for the packages Python imports on the way."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.name, True
        return
    base = node.module or ""
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        anchor = package[: len(package) - (node.level - 1)]
        base = ".".join([*anchor, base] if base else anchor)
    names = [alias.name for alias in node.names]
    submodules = [f"{base}.{name}" for name in names if f"{base}.{name}" in known]
    yield from ((sub, True) for sub in submodules)
    yield base, len(submodules) < len(names)  # a name read from `base` itself


def _discovered_submodules(tree: ast.Module, path: Path) -> Iterator[tuple[str, int]]:
    """The modules a package's `__init__` discovers (`discover(__name__, __path__)` or
    `family_modules(__name__, __path__)`): every module of the folder without a leading `_`."""
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)
             and isinstance(node.func, ast.Name) and node.func.id in DISCOVERY
             and any(isinstance(a, ast.Name) and a.id == "__path__" for a in node.args)]
    if not calls:
        return
    for child in sorted(path.parent.iterdir()):
        name = child.stem if child.suffix == ".py" else child.name
        if name.startswith("_") or not (child.suffix == ".py" or (child / "__init__.py").exists()):
            continue
        yield name, calls[0].lineno


DISCOVERY = ("discover", "family_modules")


def import_graph(root: Path) -> dict[str, dict[str, Edge]]:
    """module -> {module it imports: the first line that does}, within the package `root`."""
    known = modules(root)
    graph: dict[str, dict[str, Edge]] = {name: {} for name in known}
    for module, path in known.items():
        is_package = path.name == "__init__.py"
        own_packages = {".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 1)}
        if is_package:
            own_packages.add(module)
        tree = ast.parse(path.read_text(), str(path))
        for name, line in _discovered_submodules(tree, path) if is_package else ():
            if f"{module}.{name}" in known:
                graph[module].setdefault(f"{module}.{name}", Edge(f"{module}.{name}", line))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for target, explicit in _imported(node, module, is_package, known):
                parts = target.split(".")
                chain = [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
                for step in chain:
                    last = step == target
                    if step not in known or step == module:
                        continue
                    if step in own_packages and not (last and explicit):
                        continue  # imported before this module ran
                    graph[module].setdefault(step, Edge(step, node.lineno))
    return graph


def knots(graph: dict[str, dict[str, Edge]]) -> list[set[str]]:
    """The strongly connected components of more than one module: each holds a cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(v: str) -> None:  # Tarjan; vfcheck's graph is far shallower than the limit
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while (w := stack.pop()) != v:
                on_stack.discard(w)
                component.add(w)
            on_stack.discard(v)
            component.add(v)
            if len(component) > 1:
                found.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def shortest_cycle(graph: dict[str, dict[str, Edge]], knot: set[str]) -> list[str]:
    """The shortest cycle through the knot's first module, first module repeated last."""
    start = min(knot)
    came_from: dict[str, str] = {}
    todo = deque([start])
    while todo:
        v = todo.popleft()
        if start in graph[v]:
            path = [v]
            while path[-1] != start:
                path.append(came_from[path[-1]])
            return [*reversed(path), start]
        for w in sorted(graph[v]):
            if w in knot and w not in came_from and w != start:
                came_from[w] = v
                todo.append(w)
    raise AssertionError(f"no cycle through {start} in {sorted(knot)}")


def cycles(graph: dict[str, dict[str, Edge]]) -> list[list[str]]:
    """One shortest cycle per knot."""
    return [shortest_cycle(graph, knot) for knot in knots(graph)]


def describe(cycle: list[str], graph: dict[str, dict[str, Edge]], root: Path) -> str:
    """`a -> b (a.py:12) -> a (b.py:30)`: each step with the import line that makes it."""
    known = modules(root)
    steps = [cycle[0]]
    for a, b in itertools.pairwise(cycle):
        where = known[a].relative_to(root.parent)
        steps.append(f"{b} ({where}:{graph[a][b].line})")
    return " -> ".join(steps)


def test_vfcheck_imports_no_cycle() -> None:
    graph = import_graph(SOURCE)
    found = []
    for knot in knots(graph):
        line = describe(shortest_cycle(graph, knot), graph, SOURCE)
        found.append(f"{line}; tangled with it: {', '.join(sorted(knot))}")
    for line in found:
        print("cycle:", line)
    assert not found, (
        f"{len(found)} import cycle(s) in vfcheck (function-level imports count):\n"
        + "\n".join(found)
        + "\nMove what both sides need into a module of its own, below both.")


def layers_of(graph: dict[str, dict[str, Edge]]) -> dict[str, dict[str, Edge]]:
    """The graph folded into layers: each module counts as the package's direct child it is
    in (`vfcheck.checks`, `vfcheck._host`, `vfcheck._options.resolved`), and an import between two
    modules is an edge between their layers (the first such import is kept)."""

    def layer(module: str) -> str:
        return ".".join(module.split(".")[:2])

    folded: dict[str, dict[str, Edge]] = {layer(m): {} for m in graph}
    for module, edges in graph.items():
        for target, edge in edges.items():
            if layer(target) != layer(module):
                folded[layer(module)].setdefault(layer(target), Edge(layer(target), edge.line))
    return folded


def test_vfcheck_layers_have_no_cycle() -> None:
    """A layer imports only layers below it: checks do not import the process core, the
    process core does not import the front ends."""
    graph = import_graph(SOURCE)
    folded = layers_of(graph)
    found = []
    for knot in knots(folded):
        cycle = shortest_cycle(folded, knot)
        steps = []
        for a, b in itertools.pairwise(cycle):
            module, edge = next((m, e[t]) for m, e in sorted(graph.items())
                                for t in e if m.startswith(a + ".") or m == a
                                if t == b or t.startswith(b + "."))
            steps.append(f"{a} -> {b} ({module}:{edge.line})")
        found.append("; ".join(steps))
    assert not found, (
        f"{len(found)} cycle(s) between vfcheck's layers:\n" + "\n".join(found)
        + "\nMove what both layers need into a layer below both (`vfcheck._host`).")


def _sized_modules() -> list[object]:
    params: list[object] = []
    for path in sorted(SOURCE.rglob("*.py")):
        shown = str(path.relative_to(SOURCE.parent))
        params.append(pytest.param(path, id=shown))
    return params


@pytest.mark.parametrize("path", _sized_modules())
def test_no_module_is_over_550_lines(path: Path) -> None:
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, (
        f"{path.relative_to(SOURCE.parent)} has {lines} lines (limit {MAX_LINES}): it holds "
        "more than one job; split it into modules that each do one.")


# -- the graph builder itself, on small packages


def write_package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "pkg"


def test_a_cycle_hidden_in_a_function_is_found_and_named_with_its_lines(
    tmp_path: Path,
) -> None:
    pkg = write_package(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "from pkg.b import f\n",
        "pkg/b.py": "def f():\n    from . import c\n",
        "pkg/c.py": "import os\n\ndef g():\n    from .a import x\n",
    })
    graph = import_graph(pkg)
    assert cycles(graph) == [["pkg.a", "pkg.b", "pkg.c", "pkg.a"]]
    assert describe(cycles(graph)[0], graph, pkg) == (
        "pkg.a -> pkg.b (pkg/a.py:1) -> pkg.c (pkg/b.py:2) -> pkg.a (pkg/c.py:4)")


def test_package_inits_are_edges_as_python_runs_them(tmp_path: Path) -> None:
    pkg = write_package(tmp_path, {
        "pkg/__init__.py": "from pkg.sub.low import VALUE\n",
        "pkg/top.py": "import pkg.sub.low\n",
        "pkg/sub/__init__.py": "from pkg import top\n",
        "pkg/sub/low.py": "import pkg.sub.other\nfrom pkg.sub import NAME\nVALUE = 1\n",
        "pkg/sub/other.py": "from . import low\nfrom .. import top\n",
    })
    graph = {m: set(edges) for m, edges in import_graph(pkg).items()}
    assert graph == {
        "pkg": {"pkg.sub", "pkg.sub.low"},  # its own subpackage's __init__ runs first
        "pkg.top": {"pkg.sub", "pkg.sub.low"},
        "pkg.sub": {"pkg.top"},  # `from pkg import top`: the module, not pkg's names
        # inside pkg.sub: its __init__ ran before; a name read from it is still an edge
        "pkg.sub.low": {"pkg.sub.other", "pkg.sub"},
        "pkg.sub.other": {"pkg.sub.low", "pkg.top"},
    }
    assert cycles(import_graph(pkg)) == [["pkg.sub", "pkg.top", "pkg.sub"]]


def test_a_cycle_between_layers_is_found_though_no_module_cycle_is(tmp_path: Path) -> None:
    pkg = write_package(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/checks/__init__.py": "",
        "pkg/checks/hygiene.py": "from pkg.core.processes import kill\n",
        "pkg/core/__init__.py": "",
        "pkg/core/processes.py": "def kill(): ...\n",
        "pkg/core/worker.py": "from pkg.checks.hygiene import kill\n",
    })
    graph = import_graph(pkg)
    assert cycles(graph) == []
    assert knots(layers_of(graph)) == [{"pkg.checks", "pkg.core"}]


def test_the_process_core_names_no_family_and_no_check() -> None:
    """`vfcheck._isolation` runs what the registry declares (phases, worker modes, the gate
    check, which checks block a task): a family or check named there as a string is a
    family's knowledge leaking into the process core."""
    from vfcheck.checks import REGISTRY

    names = set(REGISTRY.families) | {spec.id for spec in REGISTRY}
    found = []
    core = SOURCE / "_isolation"
    assert core.is_dir(), f"{core} moved: point this test at the process core"
    for path in sorted(core.rglob("*.py")):
        tree = ast.parse(path.read_text())
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef
                                    | ast.AsyncFunctionDef)
                      and node.body and isinstance(node.body[0], ast.Expr)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and node.value in names and id(node) not in docstrings:
                found.append(f"{path.relative_to(SOURCE.parent)}:{node.lineno}: {node.value!r}")
    assert not found, "the process core names families or checks:\n" + "\n".join(found)


# -- the drawing of docs/architecture.md


ARCHITECTURE = SOURCE.parent / "docs" / "architecture.md"


def drawn_rows(text: str) -> list[list[str]]:
    """The layers docs/architecture.md draws, top row first: each row's names before its
    description (`a/ · b/ · c`), as layer names (`vfcheck.a`; `vfcheck` for the package)."""
    start, end = "<!-- layers:start -->", "<!-- layers:end -->"
    assert start in text and end in text, "docs/architecture.md lost its layers markers"
    rows = []
    for line in text.split(start, 1)[1].split(end, 1)[0].splitlines():
        if not line.strip() or line.startswith((" ", "`")):
            continue  # arrows, descriptions, the fence
        names = line.split("  ", 1)[0].split(" · ")
        rows.append([("vfcheck." + n.strip().rstrip("/")) if n.strip() != "vfcheck"
                     else "vfcheck" for n in names])
    return rows


def layer_violations(rows: list[list[str]], folded: dict[str, dict[str, Edge]]) -> list[str]:
    """Each import that goes up the drawing or sideways in a row, and each layer drawn
    twice or not at all."""
    rank = {name: i for i, row in enumerate(rows) for name in row}
    found = [f"{name} is drawn {sum(name in r for r in rows)} times"
             for name in rank if sum(name in r for r in rows) != 1]
    found += [f"{name} is not drawn" for name in folded if name not in rank]
    found += [f"{name} is drawn but is no layer" for name in rank if name not in folded]
    for layer, edges in sorted(folded.items()):
        for target in sorted(edges):
            if layer in rank and target in rank and rank[target] <= rank[layer]:
                where = "in its own row" if rank[target] == rank[layer] else "above it"
                found.append(f"{layer} imports {target}, drawn {where}")
    return found


def test_the_architecture_drawing_is_the_import_graph() -> None:
    """docs/architecture.md draws the layers top to bottom; each imports only the rows
    below it. A move in the code that breaks the drawing fails here: redraw it."""
    rows = drawn_rows(ARCHITECTURE.read_text())
    found = layer_violations(rows, layers_of(import_graph(SOURCE)))
    assert not found, ("docs/architecture.md's drawing disagrees with the import graph:\n"
                       + "\n".join(found))


def test_a_drawing_that_puts_a_layer_too_low_is_caught(tmp_path: Path) -> None:
    pkg = write_package(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/top.py": "from pkg.low import x\n",
        "pkg/low.py": "x = 1\n",
        "pkg/side.py": "from pkg.top import y\n",
    })
    folded = layers_of(import_graph(pkg))
    drawing = ("<!-- layers:start -->\n```text\nlow                 the bottom? no\n   |\n"
               "top · side          two in a row\n```\n<!-- layers:end -->\n")
    rows = [[n.replace("vfcheck", "pkg", 1) for n in row] for row in drawn_rows(drawing)]
    assert layer_violations(rows, folded) == [
        "pkg is not drawn",
        "pkg.side imports pkg.top, drawn in its own row",
        "pkg.top imports pkg.low, drawn above it",
    ]


def test_no_dead_code() -> None:
    """vulture over the package, configured in pyproject.toml's `[tool.vulture]` (what it
    cannot see used is named there, with why): nothing it finds is left."""
    from vulture import core
    from vulture.config import make_config

    with (SOURCE.parent / "pyproject.toml").open("rb") as pyproject:
        settings = make_config(argv=[], tomlfile=pyproject)
    finder = core.Vulture(ignore_names=settings["ignore_names"],
                          ignore_decorators=settings["ignore_decorators"])
    finder.scavenge([str(SOURCE.parent / p) for p in settings["paths"]])
    found = [f"{Path(item.filename).resolve().relative_to(SOURCE.parent)}:{item.first_lineno}: "
             f"{item.message} ({item.confidence}%)"
             for item in finder.get_unused_code(min_confidence=settings["min_confidence"])]
    assert not found, "dead code (remove it, or name it in [tool.vulture] with why):\n" + \
        "\n".join(found)
