"""Warm starts around a runner's episodes: on or off for its lifetime, and the tool
servers' zygote kept only for an env that has tool servers (`vfcheck._host.warm_starts`).

The check worker sets warm starts up itself (`vfcheck._isolation.worker`) and settles its
zygote with `settle_tool_zygote`, as `vfcheck run`'s runner does here.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from vfcheck._episodes.tiers import offers_tools


@contextlib.asynccontextmanager
async def warm_starts_if(wanted: bool | None,
                         tools_hinted: Callable[[], bool] = lambda: True
                         ) -> AsyncIterator[None]:
    """Warm starts in this process while the runner is open, if `wanted` and the kernel
    lets it adopt the children; cold starts if not; None: as this process set them (the
    check worker starts them for an env with tools, and removes the port files). The tool
    servers' zygote starts before the load where `tools_hinted()` (the env's source names a
    toolset), so that it imports beside the load; `settle_tool_zygote` settles it once the
    env is loaded. At the end, the port files of its tool servers go
    (`vfcheck._host.port_files`)."""
    from vfcheck._host.processes import become_subreaper
    from vfcheck._host.warm_starts import WARM

    if wanted is None:
        yield
        return
    from vfcheck._host.port_files import PORT_FILES

    if not wanted:
        WARM.off("warm starts are off (--cold-starts)")
        try:
            yield
        finally:
            PORT_FILES.remove()  # verifiers never removes its tool servers' port files
        return
    become_subreaper()
    WARM.reset()
    if tools_hinted():
        WARM.start()
    WARM.allow_scripts()
    try:
        yield
    finally:
        WARM.close()
        PORT_FILES.remove()


def settle_tool_zygote(env: Any, zygote_env: Mapping[str, str] | None = None, *,
                       unsure: bool = True) -> None:
    """Once `env` is loaded: the tool servers' zygote runs (started with `zygote_env`, this
    process's environment when None) if the env has tool servers, and stops if it has none
    (a chat env's would only pay for its imports). `unsure`: whether to keep one when the
    env's own `toolsets()` raises (its episodes will say)."""
    from vfcheck._host.warm_starts import NO_TOOL_SERVERS, WARM

    try:
        tools = offers_tools(env)
    except Exception:  # noqa: BLE001 - env code's toolsets()
        tools = unsure
    if tools:
        WARM.start(zygote_env)
    else:
        WARM.drop_zygote(NO_TOOL_SERVERS)
