"""A golden write is refused where links lead out of the project."""

from __future__ import annotations

from pathlib import Path

from vfcheck._shared.paths import write_refusal


def test_write_refusal_resolves_links(tmp_path: Path) -> None:
    (tmp_path / "here" / "golden").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "here" / "golden" / "env").symlink_to(tmp_path / "elsewhere")
    here = tmp_path / "here"
    assert write_refusal(here / "golden" / "new" / "a.json", here) is None
    refused = write_refusal(here / "golden" / "env" / "a.json", here)
    assert refused is not None and refused.startswith(
        f"vfcheck will not write {tmp_path / 'elsewhere' / 'a.json'}: it is outside {here}")
