"""The check catalogue as the docs print it, rendered from the registry.

`vfcheck list-checks --markdown` prints it; docs/reference/checks.md holds the same table
between `<!-- checks:start -->` and `<!-- checks:end -->`, and a test keeps the two equal,
so the docs cannot drift from the checks that run.
"""

from __future__ import annotations

from collections.abc import Iterable

from vfcheck.checks._registry import CheckSpec

START, END = "<!-- checks:start -->", "<!-- checks:end -->"


def markdown_table(specs: Iterable[CheckSpec]) -> str:
    lines = ["| family / id | per | fails when | why it matters |", "|---|---|---|---|"]
    lines += [f"| `{s.id}` | {s.scope} | {_cell(s.fails_when)} | {_cell(s.why)} |"
              for s in specs]
    return "\n".join(lines)


def readme_block(text: str) -> str | None:
    """The catalogue table a page holds between the markers (None: no markers)."""
    if START not in text or END not in text:
        return None
    return text.split(START, 1)[1].split(END, 1)[0].strip()


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
