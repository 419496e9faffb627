"""The fast tier: verifiers' own chat program, run in the host process.

The `null` and `bash` harnesses run verifiers' bundled chat program
(`harnesses/utils/launch.py`, `CHAT_PROGRAM_SOURCE`) as a uv script in a subprocess, whose
start is most of an episode's cost. `Harness.launch`'s contract (`verifiers/v1/harness.py`,
"The interception is the contract, not the process") lets a harness run its loop in-process
as long as every model call goes through the interception `endpoint` with the rollout
`secret`. This harness executes that same program source in a module namespace of its own
(it is inert on import: its entry point is behind `__main__`), does what the program's
`main()` does with the arguments the replaced harness would pass, then drives its
`run_chat_loop`: the requests, retries, stream parsing, MCP client and tool gate are
verifiers' own, and traces and notifies are real.

Tools run in the task's own tool servers, started by the rollout as for any harness.
Mirroring `bash` offers its `bash`/`edit` tools and its system prompt, so the model sees the
same request on both tiers; the built-ins are offered, never run here (the host is not the
runtime), and a script that calls one keeps the role on the env tier
(`vfcheck._episodes.tiers.role_tiers`).

Importing this module imports verifiers; it is loaded only by verifiers' harness loader.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import ssl
import traceback
from contextlib import AsyncExitStack
from typing import Any, Literal

import verifiers.v1 as vf
from pydantic import Field
from verifiers.v1.dialects.chat import message_to_wire
from verifiers.v1.harnesses.utils.launch import CHAT_PROGRAM_SOURCE
from verifiers.v1.runtimes import ProgramResult

from vfcheck._episodes.tiers import HARNESS_ID

SDK_MAX_RETRIES = 2
"""The openai SDK's own default (`openai._constants.DEFAULT_MAX_RETRIES`), which the program
leaves as is: what a real episode pays after a 5xx or a cut stream."""


@functools.cache
def chat_program() -> dict[str, Any]:
    """verifiers' bundled chat program, executed once as a module (not as `__main__`)."""
    namespace: dict[str, Any] = {"__name__": "vfcheck_chat_program"}
    exec(compile(CHAT_PROGRAM_SOURCE, "<verifiers chat program>", "exec"), namespace)
    return namespace


@functools.cache
def verifying_context() -> ssl.SSLContext:
    """The SSL context of the program's clients (`verify=certifi.where()` in its `main()`),
    built once: an httpx client builds its own from certifi's bundle otherwise, ~20 ms of CPU
    that blocks the event loop (seconds under load), for every episode's client."""
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


class FastChatConfig(vf.HarnessConfig):
    """The replaced harness's program flags (`mirrors`), and the SDK's retries."""

    mirrors: Literal["null", "bash"] = "null"
    """`bash`: the program as `BashHarness.launch` runs it (`--bash`, its system prompt)."""
    edit: bool = False
    """`bash`'s `--edit` (offer the `edit` tool)."""
    compaction: bool = False
    summarize_at_tokens: int | None = None
    max_retries: int = Field(SDK_MAX_RETRIES, ge=0)
    """The program's SDK retries (and its stream retries, which count the same). vfcheck's
    fault probes set 1 (`vfcheck.checks._lab.FAULT_SETTINGS`)."""


def bash_system_prompt(edit: bool, system: str | None) -> str:
    """`BashHarness.launch`'s system prompt, from its own fragments."""
    from verifiers.v1.harnesses.bash.harness import BASH_SYSTEM_PROMPT, EDIT_SYSTEM_PROMPT

    fragments = [BASH_SYSTEM_PROMPT, *([EDIT_SYSTEM_PROMPT] if edit else [])]
    return "\n\n".join(p for p in (" ".join(fragments), system) if p)


class FastChatHarness(vf.Harness[FastChatConfig]):
    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_MCP = True
    SUPPORTS_RESUME = True
    SUPPORTS_TOOL_INTERCEPTION = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    def program_args(self, ctx: Any, endpoint: str, secret: str, system: str,
                     tool_interception_url: str | None) -> argparse.Namespace:
        """The program's `parse_args()` result for the replaced harness's argv; `bash` and
        `edit` stay off so the loop never runs a built-in on the host."""
        config = self.config
        return argparse.Namespace(
            base_url=endpoint, api_key=secret, model=ctx.model, system_prompt=system,
            prompt="", initial_messages_file="", mcp_config="",
            tool_interception_url=tool_interception_url or "", bash=False,
            compaction=config.compaction, summarize_at_tokens=config.summarize_at_tokens,
            edit=False, search=False, serper_key="",
        )

    async def launch(
        self,
        ctx: Any,
        trace: Any,
        runtime: Any,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str],
        data: Any,
        tool_interception_url: str | None = None,
    ) -> ProgramResult:
        program = chat_program()
        config = self.config
        bash = config.mirrors == "bash"
        system, prompt = self.resolve_prompt(data)
        if bash:
            system = bash_system_prompt(config.edit, system)
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
        if isinstance(prompt, str):
            messages.append({"role": "user", "content": prompt})
        elif prompt:
            messages += [message_to_wire(m) for m in prompt]
        args = self.program_args(ctx, endpoint, secret, system or "", tool_interception_url)
        httpx = program["httpx"]
        timeout = httpx.Timeout(600.0 if bash else None, connect=5.0)
        client = program["AsyncOpenAI"](
            base_url=endpoint, api_key=secret, max_retries=config.max_retries, timeout=timeout,
            http_client=program["DefaultAsyncHttpxClient"](verify=verifying_context(),
                                                           timeout=timeout),
        )
        tool_client = (httpx.AsyncClient(timeout=httpx.Timeout(None, connect=5.0),
                                         verify=verifying_context())
                       if tool_interception_url else None)
        # the program's main(): built-ins first, then the MCP servers' tools
        tools: list[dict[str, Any]] = [program["BASH_TOOL"]] if bash else []
        reserved = {"bash"} if bash else set()
        if bash and config.edit:
            tools.append(program["EDIT_TOOL"])
            reserved.add("edit")
        try:
            async with AsyncExitStack() as stack:
                dispatch: dict[str, Any] = {}
                servers: dict[str, Any] = {}
                if mcp_urls:
                    mcp_config = {"mcpServers": {
                        name: {"url": url, "timeout": config.tool_timeout}
                        for name, url in mcp_urls.items()
                    }}
                    mcp_tools, dispatch, servers = await asyncio.wait_for(
                        program["connect_mcp"](mcp_config, stack, reserved),
                        timeout=None if bash else 60,
                    )
                    tools += mcp_tools
                compactor = program["Compactor"](
                    client, ctx.model, tools, args.compaction, args.summarize_at_tokens)
                if compactor.enabled and compactor.threshold is None:
                    compactor.threshold = await program["discover_threshold"](client, ctx.model)
                compactor.note_good(messages)
                await program["run_chat_loop"](
                    args, compactor, messages, dispatch, servers, tool_client
                )
        except SystemExit as exit_:  # the program's own transport-error exit (97)
            code = exit_.code if isinstance(exit_.code, int) else 1
            return ProgramResult(exit_code=code, stdout="", stderr="")
        except Exception:  # noqa: BLE001 - a program crash is its exit status, as in a subprocess
            return ProgramResult(
                exit_code=1, stdout="", stderr=traceback.format_exc()
            )
        finally:
            await client.close()
            if tool_client is not None:
                await tool_client.aclose()
        return ProgramResult(exit_code=0, stdout=json.dumps({"messages": len(messages)}), stderr="")


__all__ = ["HARNESS_ID", "FastChatConfig", "FastChatHarness"]
