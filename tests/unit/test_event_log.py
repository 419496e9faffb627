"""The event log is read by two threads of one front end at once (the supervisor's and the
one showing findings as they come), through one `EventLog`: no event may be skipped or
garbled. Two polls racing used to advance the offset twice past the same chunk, so the
findings after it were never read (a report with none) or a half line failed to parse."""

from __future__ import annotations

import threading
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from vfcheck._frontends.report import write_junit
from vfcheck._isolation.events import EventLog, append_event
from vfcheck._isolation.supervisor import EnvCheck
from vfcheck._options.resolved import CheckOptions
from vfcheck._shared.findings import EnvReport, Finding, TaskId

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


def test_the_timeline_holds_each_unit_and_the_workers_marks(tmp_path: Path) -> None:
    """The JSON report's `timeline` (and JUnit's `time`) come from the events' own clock: a
    unit's start and finding, the first worker's spawn, hello, plan and done."""
    path = tmp_path / "env.jsonl"
    gold = Finding("gold", "gold", TaskId(1, "k1"), "passed", "ok")
    load = Finding("load", "load", None, "passed", "ok")
    for event in [{"event": "hello", "t": 10.5, "spawned": 10.0, "pid": 1},
                  {"event": "start", "t": 11.0, "check": "load", "index": None},
                  {"event": "finding", "t": 12.0, "finding": load.as_dict()},
                  {"event": "plan", "t": 12.0, "tasks": [], "sample": []},
                  {"event": "start", "t": 12.25, "check": "gold", "index": 1},
                  {"event": "finding", "t": 13.0, "finding": gold.as_dict()},
                  {"event": "hello", "t": 20.0, "pid": 2},  # a restart keeps the first
                  {"event": "done", "t": 14.0}]:
        append_event(path, event)
    log = EventLog(path)
    log.poll()
    assert log.timeline["events"] == {"hello": 10.5, "spawned": 10.0, "plan": 12.0,
                                      "done": 14.0}
    assert log.timeline["units"] == [["load", None, 11.0, 12.0], ["gold", 1, 12.25, 13.0]]
    report = EnvReport("vfc-echo", findings=[load, gold], timeline=log.timeline)
    assert report.seconds(gold) == 0.75 and report.seconds(load) == 1.0
    assert EnvReport.from_dict(report.as_dict()).timeline == log.timeline
    write_junit(tmp_path / "r.xml", [report])
    cases = ET.parse(tmp_path / "r.xml").getroot().iter("testcase")
    assert [c.get("time") for c in cases] == ["1.000", "0.750"]


def test_a_stopped_supervisor_whose_run_dir_is_gone_writes_nothing_and_raises_nothing(
        tmp_path: Path) -> None:
    """A second Ctrl-C: the front end stops each env's supervisor (waiting for it a while),
    writes the reports and removes the run dir. A supervisor thread that outlived the wait
    on a busy machine then ends with nothing to write its `final` to: no traceback (CI,
    load 9: `FileNotFoundError` from the thread). While it runs, a missing run dir is
    vfcheck's own failure and still raises."""
    run_dir = tmp_path / "run"
    check = EnvCheck("vfc-echo", CheckOptions(), run_dir, slots=threading.Semaphore(1))
    with pytest.raises(FileNotFoundError):
        check._emit("final")  # the run dir was never made: not stopped, so it raises
    check._stop.set()
    check._emit("final")
    assert not run_dir.exists()
