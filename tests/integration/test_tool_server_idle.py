"""A tool server that stays alive without writing its port is named once it has been idle
(no CPU, no output) for `SILENT_SECONDS`; one that keeps working is left alone (real
processes: `sleep` and a busy interpreter)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from vfcheck._host.tool_servers import DeadToolServer, watch


async def test_a_server_alive_and_idle_without_its_port_is_reported(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """A real process that sleeps (no CPU, no output, no port) is named after the idleness
    bound with no exit code; one that keeps working (CPU) is not."""
    from vfcheck._host import tool_servers
    from vfcheck._host.tool_servers import watching

    monkeypatch.setattr(tool_servers, "SILENT_SECONDS", 1.5)
    seen: list[DeadToolServer] = []
    idle = await asyncio.create_subprocess_exec("sleep", "30")
    busy = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import time\nend = time.time() + 30\nwhile time.time() < end: pass")
    try:
        with watching(seen.append):
            for proc, name in ((idle, "vfc_idle"), (busy, "vfc_busy")):
                watch(proc, ["python", "-m", name],
                      {"env": {"MCP_PORT_FILE": str(tmp_path / name)}})
            await asyncio.sleep(4.0)
            named = list(seen)  # before the kill below ends both (an exit is reported too)
    finally:
        for proc in (idle, busy):
            proc.kill()
            await proc.wait()
    assert [(s.module, s.exit_code, s.silent_for) for s in named] == [("vfc_idle", None, 1.5)]
    assert named[0].short() == "the tool server `python -m vfc_idle` ran 2 s idle without serving"
