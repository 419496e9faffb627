"""Read the installed verifiers' source without importing it: file:line citations and the
user-facing strings (`USAGE`, config-field help) the library suite holds to the truth.

Importing `verifiers.v1` costs seconds and runs code; the strings under test are literals,
so `ast` reads them straight from the files and says where each one lives. Citations are
relative (`verifiers/v1/cli/validate.py:59`), never a machine path.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


def verifiers_root() -> Path | None:
    """The installed `verifiers` package folder (`find_spec` of a top-level package runs
    none of its code)."""
    spec = importlib.util.find_spec("verifiers")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def cite(path: Path, line: int | None = None) -> str:
    """`verifiers/<path inside the package>[:line]`."""
    root = verifiers_root()
    rel = path.relative_to(root).as_posix() if root and path.is_relative_to(root) else path.name
    return f"verifiers/{rel}" + (f":{line}" if line else "")


def module_name(path: Path) -> str:
    """`verifiers.v1.cli.eval.main` for `<root>/v1/cli/eval/main.py`."""
    root = verifiers_root()
    assert root is not None
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(("verifiers", *parts))


def line_of(lines: list[str], needle: str, start: int, end: int) -> int:
    """The first line in [start, end] (1-based) holding `needle`, else `start`: a literal
    spread over several source lines is cited where the claim itself is written."""
    for number in range(start, min(end, len(lines)) + 1):
        if needle in lines[number - 1]:
            return number
    return start


@dataclass(frozen=True)
class Literal:
    """A string constant of the source and where it is written."""

    path: Path
    lineno: int
    end_lineno: int
    text: str

    def cite(self, needle: str | None = None) -> str:
        line = self.lineno
        if needle:
            lines = self.path.read_text(encoding="utf-8").splitlines()
            line = line_of(lines, needle, self.lineno, self.end_lineno)
        return cite(self.path, line)


def module_constant(path: Path, name: str) -> Literal | None:
    """The module-level `name = "<literal>"` of `path` (implicit concatenation included),
    or None when absent or not a literal."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
        ):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return None
            if isinstance(value, str):
                return Literal(path, node.lineno, node.end_lineno or node.lineno, value)
    return None


@dataclass(frozen=True)
class FieldHelp:
    """The attribute docstring of one config field: what `--help` shows for its flag."""

    cls: str
    field: str
    annotation: str
    doc: Literal


def field_docs(path: Path) -> Iterator[FieldHelp]:
    """Every `field: T = ...` followed by a docstring, in every class of `path` (pydantic
    config classes document their flags this way; `pydantic_config` renders them as help)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for field, doc in zip(cls.body, cls.body[1:], strict=False):
            if not (isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name)):
                continue
            if not (isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)
                    and isinstance(doc.value.value, str)):
                continue
            yield FieldHelp(
                cls.name,
                field.target.id,
                ast.unparse(field.annotation),
                Literal(path, doc.lineno, doc.end_lineno or doc.lineno, doc.value.value),
            )


def class_fields(path: Path, cls: str) -> dict[str, str]:
    """Field name -> annotation source of every `field: T` in class `cls` of `path`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            return {
                f.target.id: ast.unparse(f.annotation)
                for f in node.body
                if isinstance(f, ast.AnnAssign) and isinstance(f.target, ast.Name)
            }
    return {}


def flag_of(path: Path, help_: FieldHelp, top: str) -> str:
    """The command-line flag of a field: `--resume` on the top config class `top`,
    `--rich.show-logs` for a field of a class that a top-level field is annotated with."""
    name = help_.field.replace("_", "-")
    if help_.cls == top:
        return f"--{name}"
    for field, annotation in class_fields(path, top).items():
        if help_.cls in annotation:
            return f"--{field.replace('_', '-')}.{name}"
    return f"--{help_.cls}.{name}"
