"""The event log is read by two threads of one front end at once (the supervisor's and the
one showing findings as they come), through one `EventLog`: no event may be skipped or
garbled. Two polls racing used to advance the offset twice past the same chunk, so the
findings after it were never read (a report with none) or a half line failed to parse."""

from __future__ import annotations

import threading
from pathlib import Path

from vfcheck._isolation.events import EventLog, append_event
from vfcheck._shared.findings import Finding

FINDINGS = 3000


def test_two_threads_polling_one_log_read_every_event(tmp_path: Path) -> None:
    path = tmp_path / "env.jsonl"
    path.touch()
    log = EventLog(path)
    errors: list[BaseException] = []
    writing = threading.Event()

    def write() -> None:
        for i in range(FINDINGS):
            finding = Finding("setup", "setup", None, "passed", f"finding {i} " + "x" * 200)
            append_event(path, {"event": "finding", "t": 0.0, "finding": finding.as_dict(),
                                "index": i})
        append_event(path, {"event": "final", "t": 0.0})
        writing.set()

    def read() -> None:
        try:
            while not log.final:
                log.poll()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    readers = [threading.Thread(target=read) for _ in range(2)]
    for reader in readers:
        reader.start()
    write()
    for reader in readers:
        reader.join(timeout=60)
    assert not errors, errors
    assert log.final and log.offset == path.stat().st_size
