"""The zygote's double fork (`vfcheck._host.zygote.spawn`): the child waits to be adopted
by the process that asked, and knows which process it waits out.

The child used to read its middle process as its own `getppid()`. When the middle had
already exited by then (a busy machine, the child scheduled late), that was the adopter's
pid, and the child waited `ADOPTED_WAIT` (5 s) for a parent change that had happened: one
tool server start in ten, on the check's critical path."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

from vfcheck._host import zygote


def test_the_child_waits_out_its_middle_process_even_when_it_has_already_exited(
        tmp_path: Path, monkeypatch) -> None:
    said = tmp_path / "said"
    real_getppid = os.getppid

    def late_getppid() -> int:  # the child runs late: its middle process has exited by then
        time.sleep(0.3)
        return real_getppid()

    def record(request, fds, sock, middle) -> None:  # `become`, in the forked child
        try:
            deadline = time.monotonic() + 10
            while real_getppid() == middle and time.monotonic() < deadline:
                time.sleep(0.001)  # as `become` waits
            (tmp_path / "saying").write_text(f"{middle} {real_getppid()}")
            (tmp_path / "saying").rename(said)
        finally:
            os._exit(0)

    monkeypatch.setattr(os, "getppid", late_getppid)
    monkeypatch.setattr(zygote, "become", record)
    ours, theirs = socket.socketpair()
    with ours, theirs:
        child = zygote.spawn(None, [], ours)  # type: ignore[arg-type]
    deadline = time.monotonic() + 30
    while not said.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        os.waitpid(child, 0)  # adopted by this process if it is a subreaper
    except ChildProcessError:
        pass
    middle, parent = map(int, said.read_text().split())
    assert middle not in (parent, os.getpid(), child)
