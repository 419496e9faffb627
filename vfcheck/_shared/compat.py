"""What the installed verifiers offers of the hooks vfcheck needs (feature detection).

vfcheck targets verifiers 0.4; 0.3.1 has `verifiers.v1` but none of the lifecycle hooks
(`Env.run_slot(on_trace=)`, `Trace.watch`, previews). Checks that need a missing hook are
skipped with "verifiers X lacks Y" instead of crashing; the library suite reports the
same gaps as `api` findings. Functions here but `verifiers_version` import verifiers: call
them in a worker.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

NOT_INSTALLED = "not installed"


@functools.cache
def verifiers_version() -> str:
    """The installed verifiers' version, read from its metadata (importing it costs
    seconds), or `NOT_INSTALLED`. The one definition: headers, reports, the library
    suite and "verifiers X lacks Y" all print this."""
    import importlib.metadata

    try:
        return importlib.metadata.version("verifiers")
    except importlib.metadata.PackageNotFoundError:
        return NOT_INSTALLED


@functools.cache
def episode_hooks_missing() -> tuple[str, ...]:
    """The lifecycle hooks the episode families need that this verifiers lacks."""
    from verifiers.v1.env import Env
    from verifiers.v1.trace import Trace

    missing = []
    if "on_trace" not in inspect.signature(Env.run_slot).parameters:
        missing.append("Env.run_slot(on_trace=)")
    for name in ("watch", "notify", "preview", "clear_preview", "pending"):
        if not hasattr(Trace, name):
            missing.append(f"Trace.{name}")
    return tuple(missing)


def chat_program_missing() -> bool:
    """The fast tier runs verifiers' bundled chat program (`harnesses/utils/launch.py`)."""
    import importlib.util

    try:
        return importlib.util.find_spec("verifiers.v1.harnesses.utils.launch") is None
    except ModuleNotFoundError:
        return True


def mcp_client_missing() -> str | None:
    """What the chat program's MCP client needs and this environment lacks (the program
    declares `mcp==2.0.0` and `httpx2`; on the fast tier it runs with the host's packages)."""
    import importlib.metadata

    try:
        version = importlib.metadata.version("mcp")
    except importlib.metadata.PackageNotFoundError:
        return "the package mcp (the chat program's MCP client) is not installed"
    if version.split(".")[0] != "2":
        return f"mcp {version} is installed, the chat program's MCP client needs mcp 2"
    try:
        importlib.metadata.version("httpx2")
    except importlib.metadata.PackageNotFoundError:
        return "the package httpx2 (the chat program's MCP transport) is not installed"
    return None


def lacks_message(missing: tuple[str, ...] | list[str]) -> str:
    return f"verifiers {verifiers_version()} lacks {', '.join(missing)}"


def validate_modes() -> set[str]:
    """The per-task checks `verifiers.v1.cli.validate` runs (`CHECKS`), if any."""
    try:
        from verifiers.v1.cli import validate
    except ImportError:
        return set()
    checks = getattr(validate, "CHECKS", None)
    return set(checks) if isinstance(checks, dict) else set()


def agent_roles(config: Any) -> list[str]:
    """The env config's agent roles (its `AgentConfig` fields)."""
    try:
        from verifiers.v1.configs.agent import agent_config_fields
    except ImportError:
        from verifiers.v1.configs.agent import AgentConfig

        return [name for name, value in config if isinstance(value, AgentConfig)]
    return list(agent_config_fields(config))
