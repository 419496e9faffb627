"""docs/write-your-own-env.md, run as a reader follows it: its blocks, in page order.

- a block with a `title` (`python`, `toml`) is a file of the project: written as shown;
- a `diff` block edits its titled file: each `-` line is replaced by the `+` line after it;
- a `bash` block's lines are `vfcheck` commands, run in the project; each must exit 0,
  unless a `text` block follows it: then that block is output the last command must show
  (each line, spaces collapsed; a line ending in `...` is a prefix).
"""

from __future__ import annotations

import re
import shlex
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import ROOT, vfcheck

PAGE = ROOT / "docs" / "write-your-own-env.md"
FENCE = re.compile(r'^```(?P<lang>\w+)(?: title="(?P<title>[^"]+)")?\n(?P<body>.*?)^```$',
                   re.M | re.S)


@dataclass(frozen=True)
class Block:
    lang: str
    title: str | None
    body: str


def blocks(page: Path = PAGE) -> list[Block]:
    return [Block(m["lang"], m["title"], m["body"]) for m in FENCE.finditer(page.read_text())]


def collapsed(text: str) -> str:
    return " ".join(text.split())


def apply_diff(path: Path, diff: str) -> None:
    lines = diff.splitlines()
    text = path.read_text()
    for old, new in zip(lines[::2], lines[1::2], strict=True):
        assert old.startswith("-") and new.startswith("+"), (old, new)
        assert text.count(old[1:]) == 1, f"{path.name} does not hold {old[1:]!r} once"
        text = text.replace(old[1:], new[1:])
    path.write_text(text)


def test_the_page_is_complete() -> None:
    """Cheap, no process: the page holds the env, init, a failure and a golden update."""
    found = blocks()
    assert {b.title for b in found if b.lang in ("python", "toml")} == {
        "my_env.py", "pyproject.toml"}
    commands = [line for b in found if b.lang == "bash" for line in b.body.splitlines()]
    assert commands[0] == "vfcheck init" and "vfcheck check" in commands
    assert any("--golden-update" in c for c in commands)
    env = next(b.body for b in found if b.title == "my_env.py")
    assert '__all__ = ["ReverseTaskset"]' in env and "from vfcheck import reply_trace" in env


@pytest.mark.slow
def test_the_page_runs_as_shown(tmp_path: Path) -> None:
    project = tmp_path / "my-env"
    project.mkdir()

    def run(args: list[str]) -> subprocess.CompletedProcess[str]:
        assert args[0] == "vfcheck", args
        return vfcheck(*args[1:], cwd=project, timeout=900)

    last = run_page(blocks(), project, run)
    assert last.returncode == 0  # the golden traces, updated, match


def run_page(found: list[Block], project: Path,
             run: Callable[[list[str]], subprocess.CompletedProcess[str]],
             ) -> subprocess.CompletedProcess[str]:
    """Follow a page's blocks in `project`, each `bash` line through `run`; the last
    command's result."""
    last = None
    for n, block in enumerate(found):
        if block.lang in ("python", "toml") and block.title:
            (project / block.title).write_text(block.body)
        elif block.lang == "diff":
            apply_diff(project / str(block.title), block.body)
        elif block.lang == "bash":
            shown = n + 1 < len(found) and found[n + 1].lang == "text"
            for line in block.body.splitlines():
                last = run(shlex.split(line))
                output = last.stdout + last.stderr
                assert shown or last.returncode == 0, f"{line}: exit {last.returncode}\n" \
                                                      f"{output[-3000:]}"
        elif block.lang == "text":
            assert last is not None, "a text block before any command"
            output = collapsed(last.stdout + last.stderr)
            for line in filter(None, (collapsed(x) for x in block.body.splitlines())):
                want = line.removesuffix("...").rstrip() if line.endswith("...") else line
                assert want in output, f"not in the output:\n{want}\n---\n{output[-4000:]}"
    assert last is not None, "the page runs no command"
    return last
