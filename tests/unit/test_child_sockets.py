"""The child processes' socket log, read back: what a killed process left half written."""

from __future__ import annotations

from pathlib import Path

from vfcheck._host.child_sockets import (
    read_child_attempts,
)


def test_a_log_line_cut_short_by_a_killed_process_is_left_out(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text('{"host": "a.example", "port": 1, "code": "c", "process": "p", "pid": 2}\n'
                   '{"host": "b.exa')
    assert [a.host for a in read_child_attempts(log)] == ["a.example"]
    assert read_child_attempts(tmp_path / "missing.jsonl") == []
