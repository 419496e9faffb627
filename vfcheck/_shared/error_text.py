"""Error text as a finding can quote it: one line, the cause kept.

verifiers records a harness program that died as `harness 'x' exited 1: <the tail of its
stderr>`, which is mostly a traceback's frames (verifiers' deepwiki env, offline: kilobytes
of `File ".../httpx2/_client.py"` lines before the one that says the remote MCP server
cannot be reached). A message keeps the head and the exception line. An exception group
(an anyio or asyncio `TaskGroup`'s, printed as `|`-prefixed blocks) is reduced to its leaf
exceptions, the errors that happened: the group's own line only counts them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

_EXCEPTION_LINE = re.compile(
    r"^[\s|+\-]*((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Timeout|Interrupt|"
    r"Group|Warning)(?:: .*)?)$")
_FRAME = re.compile(r'^\s*\|?\s*File "')
_GROUP_LINE = re.compile(r"^\s*[|+]")
"""A line of an exception group's printout: `  | ...`, `  + Exception Group Traceback`,
`  +-+---------------- 1 ----------------`, `    +------------------------------------`."""
_SEPARATOR = re.compile(r"^\s*\+(?:-\+)?-+(?: \d+ -+| \.\.\. -+)?\s*$|^\s*\+ Exception Group")
_GROUP_HEADER = re.compile(r"\(\d+ sub-exceptions?\)$")
"""How Python ends an exception group's own line: `ExceptionGroup: msg (2 sub-exceptions)`."""
_HEADINGS = ("Traceback (most recent call last):", "Exception Group Traceback (most recent "
             "call last):", "The above exception was the direct cause of the following "
             "exception:", "During handling of the above exception, another exception "
             "occurred:")


@dataclass(frozen=True)
class Leaf:
    """One leaf exception of a group: its line (`httpx.ConnectError: ...`) and its traceback
    (the block's lines, unprefixed), where a caller may look for the env's line."""

    exception: str
    traceback: str


def group_leaves(text: str) -> list[Leaf]:
    """The leaf exceptions of the exception groups printed in `text`, in order, each once;
    empty when it holds none. A block between two separators is one sub-exception's
    traceback; its last exception (after the chain it may hold) is a leaf unless it is a
    group itself, whose sub-exceptions follow as blocks of their own."""
    if not any(_SEPARATOR.match(line) for line in text.splitlines()):
        return []
    blocks: list[list[str]] = [[]]
    for line in text.splitlines():
        if _SEPARATOR.match(line):
            blocks.append([])
        elif _GROUP_LINE.match(line):
            content = line.split("|", 1)[1] if "|" in line else ""
            blocks[-1].append(content[1:] if content.startswith(" ") else content)
    leaves: dict[str, Leaf] = {}
    for block in blocks:
        exception = _raised(block)
        if exception is not None and not _GROUP_HEADER.search(exception):
            leaves.setdefault(exception, Leaf(exception, "\n".join(block)))
    return list(leaves.values())


def _raised(block: list[str]) -> str | None:
    """The line of the last exception a traceback's lines show: the first unindented line
    after its last frame (a message may go on over more lines)."""
    last_frame = max((i for i, line in enumerate(block) if line.startswith("  File \"")),
                     default=-1)
    for line in block[last_frame + 1:]:
        if line and not line[0].isspace() and line.strip() not in _HEADINGS:
            return line.strip()
    return None


def condense(text: str, site: Callable[[Leaf], str | None] | None = None) -> str:
    """`text` with a traceback in it reduced to its head and its last exception line
    (`harness 'vfcheck-chat' exited 1: ... httpx2.ConnectError: ...`), an exception group
    to its leaves (`...: ConnectError: ...; KeyError: 'x'`), each followed by `(site)` when
    `site` finds where it was raised; other text as it is."""
    lines = text.splitlines()
    if len(lines) < 3 or not any(_FRAME.match(line) for line in lines):
        return text
    cause = next((m.group(1) for line in reversed(lines)
                  if (m := _EXCEPTION_LINE.match(line))), None)
    if leaves := group_leaves(text):
        said = "; ".join(leaf.exception + (f" ({where})" if site and (where := site(leaf))
                                           else "") for leaf in leaves)
        outer = next((line.strip() for line in reversed(lines)
                      if line.strip() and not _GROUP_LINE.match(line)
                      and _EXCEPTION_LINE.match(line)), None)
        cause = said if outer is None or _GROUP_HEADER.search(outer) else f"{outer}, from {said}"
    if cause is None:
        return text
    head = lines[0].split(": ", 1)[0].strip() if ": " in lines[0] else ""
    return f"{head}: ... {cause}" if head and not head.startswith("Traceback") else cause


def one_line(error: BaseException, limit: int = 400) -> str:
    """`Type: message` on one line: a multi-line message keeps its first and last lines
    (uv's `error: ...` and its deepest `cause: ...`)."""
    lines = [line.strip() for line in condense(str(error)).splitlines() if line.strip()]
    text = " ... ".join(dict.fromkeys([lines[0], lines[-1]])) if lines else ""
    text = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"
