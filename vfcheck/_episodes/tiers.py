"""Which harness tier each role of an env plays on, and why (the report says so per role).

`fast` replaces verifiers' in-house chat loops (`null`, `bash`) with `vfcheck-chat`
(`vfcheck._episodes.fast_harness`), for chat roles and for roles whose tasks offer tools; the
env tier keeps the env's own harness where the fast one cannot stand in for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

HarnessTier = Literal["env", "fast"]
BUILTIN_CHAT_HARNESSES = frozenset({"null", "bash"})
"""verifiers' in-house chat loops; a role on one of these has no harness of the env's own."""
HARNESS_ID = "vfcheck-chat"
"""The fast tier's harness id (module `vfcheck_chat`, implementation
`vfcheck._episodes.fast_harness`)."""


@dataclass(frozen=True)
class RoleTier:
    """Which harness a role plays with, and why (the report says so for each role)."""

    role: str
    tier: HarnessTier
    harness: str
    reason: str
    settings: Mapping[str, Any] = field(default_factory=dict, compare=False)
    """The fast harness's config (`FastChatConfig`) besides its id: what it mirrors."""
    tools: bool = False
    """The role's tasks offer tools (each episode starts the env's tool servers)."""


def offers_tools(env: Any) -> bool:
    """Whether the env's tasks (or its taskset) declare toolsets: its episodes start tool
    servers, whatever the tier."""
    taskset = env.taskset
    task_cls = type(taskset).task_type()
    return bool(task_cls.toolsets(taskset.config.task)) or bool(
        taskset.toolsets(taskset.config))


def role_tiers(env: Any, requested: HarnessTier, *,
               script_tools: frozenset[str] = frozenset(),
               real_model: bool = False) -> list[RoleTier]:
    """Decide the tier per role. `fast` applies to a role whose harness is one of
    verifiers' chat loops (no harness of the env's own). For a role whose tasks offer tools
    the fast harness mirrors the replaced one (its prompt and built-in tools) unless the
    model may call a built-in (`script_tools`: the tool names the script's turns call; a
    `real_model` may call any), which only the env tier runs where verifiers runs it;
    elsewhere the role keeps the env's harness, and the reason says why."""
    from vfcheck._shared.compat import chat_program_missing, mcp_client_missing, verifiers_version

    has_tools = offers_tools(env)
    tiers = []
    for role, harness in env.config.agent_harnesses().items():
        hid = harness.id
        if requested == "env":
            tiers.append(RoleTier(role, "env", hid, "requested"))
        elif hid == HARNESS_ID:
            tiers.append(RoleTier(role, "fast", hid, "already the fast harness"))
        elif hid not in BUILTIN_CHAT_HARNESSES:
            tiers.append(RoleTier(role, "env", hid, f"the env's own harness {hid!r}"))
        elif chat_program_missing():
            tiers.append(RoleTier(role, "env", hid, f"verifiers {verifiers_version()} lacks "
                                  "the bundled chat program the fast tier runs"))
        elif not has_tools:
            tiers.append(RoleTier(role, "fast", HARNESS_ID, f"replaces {hid!r}"))
        elif (missing := mcp_client_missing()) is not None:
            tiers.append(RoleTier(role, "env", hid, f"the tasks offer tools and {missing}",
                                  tools=True))
        elif (blocker := builtin_blocker(harness, script_tools, real_model)) is not None:
            tiers.append(RoleTier(role, "env", hid, blocker, tools=True))
        else:
            tiers.append(RoleTier(role, "fast", HARNESS_ID,
                                  f"replaces {hid!r}; the tools run in the env's tool servers",
                                  mirrored_settings(harness), tools=True))
    return tiers


def builtin_tools(harness: Any) -> frozenset[str]:
    """The built-in tools verifiers' chat loop `harness` offers (its program's `--bash`,
    `--edit`, `--search`)."""
    if harness.id != "bash":
        return frozenset()
    names = {"bash"}
    names |= {"edit"} if getattr(harness, "edit", False) else set()
    names |= {"search"} if getattr(harness, "search", False) else set()
    return frozenset(names)


def builtin_blocker(harness: Any, script_tools: frozenset[str],
                    real_model: bool = False) -> str | None:
    """Why a tool role must stay on the env tier for its harness's built-ins, if it must:
    they run in the harness's runtime, not in the host process."""
    if getattr(harness, "search", False):
        return f"{harness.id!r} offers its web search tool (search = true), which needs the network"
    offered = builtin_tools(harness)
    if real_model and offered:
        return (f"a real model may call {', '.join(sorted(offered))}, built-in tools of "
                f"harness {harness.id!r} that only run in the harness's runtime")
    called = sorted(offered & script_tools)
    if called:
        return (f"the script calls {', '.join(called)}, a built-in tool of harness "
                f"{harness.id!r} that only runs in the harness's runtime")
    return None


def mirrored_settings(harness: Any) -> dict[str, Any]:
    """The fast harness's config that reproduces `harness`'s program flags."""
    if harness.id != "bash":
        return {"mirrors": "null"}
    compaction = getattr(harness, "compaction", None)
    return {
        "mirrors": "bash",
        "edit": bool(getattr(harness, "edit", False)),
        "compaction": compaction is not None,
        "summarize_at_tokens": getattr(compaction, "summarize_at_tokens", None),
    }
