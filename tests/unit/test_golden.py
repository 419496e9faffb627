"""Golden traces: the `GoldenBook`'s verdicts on its own, on traces made here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from vfcheck._traces.golden import (
    GoldenBook,
    GoldenExtension,
    file_stem,
    golden_diff,
    golden_document,
)

HEADER = {"env": "e", "task": "t", "task_from": "key", "tier": {"agent": "fast"},
          "script": "default", "seed": 0, "verifiers": "0.4.0"}


def trace(content: str = "hi", reward: float = 1.0) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": "say hi"},
                         {"role": "assistant", "content": content}],
            "rewards": {"echoed": {"score": reward, "weight": 1.0}}}


def test_file_stem_keeps_identities_readable_and_safe() -> None:
    assert file_stem("vfc-echo:hello world") == "vfc-echo_hello_world"
    assert file_stem("a/b\\c") == "a_b_c"
    assert file_stem("..") == "_"


def test_missing_golden_skips_with_the_record_command_and_strict_fails(tmp_path: Path) -> None:
    doc = golden_document(HEADER, [trace()])
    book = GoldenBook(tmp_path, "e", record="pytest --vf-env e --snapshot-update")
    skipped = book.settle("t", doc)
    assert (skipped.outcome, skipped.action) == ("skipped", "missing")
    assert "pytest --vf-env e --snapshot-update" in skipped.observed
    strict = GoldenBook(tmp_path, "e", strict=True, record="R").settle("t", doc)
    assert strict.outcome == "failed" and "--vf-golden-strict" in strict.observed
    assert not (tmp_path / "e").exists()


def test_update_records_then_matches_and_files_are_syrupy_json(tmp_path: Path) -> None:
    doc = golden_document(HEADER, [trace()])
    recorded = GoldenBook(tmp_path, "e", update=True).settle("t", doc)
    assert recorded.action == "recorded"
    path = tmp_path / "e" / "t.json"
    assert path.read_text() == GoldenExtension().serialize(doc)
    assert path.read_text().startswith('{\n  "header": {')
    assert GoldenBook(tmp_path, "e").settle("t", doc).action == "matched"


def test_a_mismatch_names_the_message_and_field(tmp_path: Path) -> None:
    book = GoldenBook(tmp_path, "e", update=True)
    book.settle("t", golden_document(HEADER, [trace()]))
    changed = GoldenBook(tmp_path, "e", record="R").settle(
        "t", golden_document(HEADER, [trace("hello", reward=0.5)]))
    assert changed.outcome == "failed" and changed.action == "mismatch"
    assert changed.diff == ['traces[0].messages[1].content: "hi" -> "hello"',
                            "traces[0].rewards.echoed.score: 1.0 -> 0.5"]
    assert "update the golden trace with: R" in changed.observed


def test_the_verifiers_version_is_shown_not_compared(tmp_path: Path) -> None:
    GoldenBook(tmp_path, "e", update=True).settle("t", golden_document(HEADER, [trace()]))
    newer = golden_document({**HEADER, "verifiers": "0.5.0"}, [trace()])
    before = (tmp_path / "e" / "t.json").read_bytes()
    assert GoldenBook(tmp_path, "e", update=True).settle("t", newer).action == "matched"
    assert (tmp_path / "e" / "t.json").read_bytes() == before  # not rewritten
    assert golden_diff(golden_document(HEADER, []), golden_document(
        {**HEADER, "tier": {"agent": "env"}}, [])) == ['header.tier.agent: "fast" -> "env"']


def test_a_corrupt_golden_file_fails_in_one_line_and_update_rewrites_it(tmp_path: Path) -> None:
    path = tmp_path / "e" / "t.json"
    path.parent.mkdir()
    path.write_text('{"header": {"env": "e"')  # truncated
    doc = golden_document(HEADER, [trace()])
    corrupt = GoldenBook(tmp_path, "e", record="R").settle("t", doc)
    assert corrupt.outcome == "failed" and corrupt.action == "corrupt"
    assert "is not valid JSON" in corrupt.observed and "\n" not in corrupt.observed
    assert GoldenBook(tmp_path, "e", update=True).settle("t", doc).outcome == "passed"
    assert json.loads(path.read_text())["header"]["env"] == "e"


def test_unused_lists_only_files_naming_no_task(tmp_path: Path) -> None:
    folder = tmp_path / "e"
    folder.mkdir()
    for name in ("a.json", "b.json", "old.json", "notes.txt"):
        (folder / name).write_text("{}")
    assert [p.name for p in GoldenBook(tmp_path, "e").unused(["a", "b"])] == ["old.json"]
    assert GoldenBook(tmp_path, "other").unused(["a"]) == []
