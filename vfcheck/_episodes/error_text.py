"""Error text as a finding can quote it: one line, the cause kept.

verifiers records a harness program that died as `harness 'x' exited 1: <the tail of its
stderr>`, which is mostly a traceback's frames (verifiers' deepwiki env, offline: two
kilobytes of `File ".../httpx2/_client.py"` lines before the one that says the remote MCP
server cannot be reached). A message keeps the head and the exception line.
"""

from __future__ import annotations

import re

_EXCEPTION_LINE = re.compile(
    r"^[\s|+\-]*((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Timeout|Interrupt|"
    r"Group|Warning)(?:: .*)?)$")
_FRAME = re.compile(r'^\s*\|?\s*File "')


def condense(text: str) -> str:
    """`text` with a traceback in it reduced to its head and its last exception line
    (`harness 'vfcheck-chat' exited 1: ... httpx2.ConnectError: ...`); other text as it is."""
    lines = text.splitlines()
    if len(lines) < 3 or not any(_FRAME.match(line) for line in lines):
        return text
    cause = next((m.group(1) for line in reversed(lines)
                  if (m := _EXCEPTION_LINE.match(line))), None)
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
