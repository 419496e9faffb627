"""verifiers' tool-server port files that this process caused, removed once it is done.

verifiers 0.4.0 writes `/tmp/vf-port-<uuid>` for every tool-server start with no fixed
port (`verifiers/v1/mcp/launch.py`, `serve_in_runtime`) and never removes it: a training
node fills up with them. Every start goes through `vfcheck._host.warm_starts` (warm or
cold), which notes the path from the server's environment (`MCP_PORT_FILE`); `remove()`
deletes exactly those, so another run's files, and vf-eval's, stay where they are.
"""

from __future__ import annotations

import contextlib
from pathlib import Path


class PortFiles:
    """The port files this process's tool-server starts were given."""

    def __init__(self) -> None:
        self.noted: list[Path] = []

    def note(self, path: Path) -> None:
        self.noted.append(path)

    def remove(self) -> list[str]:
        """Delete the noted files (the tool servers are gone); those that were there."""
        removed = []
        for path in self.noted:
            with contextlib.suppress(OSError):
                path.unlink()
                removed.append(str(path))
        self.noted.clear()
        return removed


PORT_FILES = PortFiles()
"""This process's."""
