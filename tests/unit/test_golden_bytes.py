"""The bytes of a golden file are pinned: syrupy's JSON serializer writes them, and a
syrupy release that writes them differently (indent, key order, escapes, the final newline)
would rewrite every user's golden traces at their next `--golden-update`, as a diff of
every line. pyproject.toml bounds syrupy to the majors tested; this test fails first when
a release inside the bounds changes the bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import ROOT

from vfcheck._traces.golden import GoldenExtension

COMMITTED = sorted((ROOT / "golden").rglob("*.json"))


@pytest.mark.parametrize("committed", COMMITTED[:4], ids=lambda p: p.name)
def test_a_golden_file_is_written_back_byte_for_byte(committed: Path, tmp_path: Path) -> None:
    extension = GoldenExtension()
    document = json.loads(committed.read_text())
    written = tmp_path / committed.name
    extension.write(written, str(extension.serialize(document)))
    assert written.read_bytes() == committed.read_bytes(), (
        f"syrupy now writes {committed.relative_to(ROOT)} differently: pin syrupy below this "
        "release in pyproject.toml, or decide to rewrite every user's golden files (and say "
        "so in CHANGELOG.md)")


def test_the_pinned_files_are_there() -> None:
    assert len(COMMITTED) >= 4, "the golden traces of the fixture envs went missing"
