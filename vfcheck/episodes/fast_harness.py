"""The fast tier: verifiers' own chat program, run in the host process.

The `null` harness runs verifiers' bundled chat program (`harnesses/utils/launch.py`,
`CHAT_PROGRAM_SOURCE`) as a uv script in a subprocess: ~1.4 s an episode, mostly the
program's start. `Harness.launch`'s contract (`verifiers/v1/harness.py`, "The interception
is the contract, not the process") lets a harness run its loop in-process as long as every
model call goes through the interception `endpoint` with the rollout `secret`. This harness
executes that same program source in a module namespace of its own (it is inert on import:
its entry point is behind `__main__`) and drives its `run_chat_loop` directly, so the
requests, retries and stream parsing are verifiers' own, and traces and notifies are real.

Importing this module imports verifiers; it is loaded only by verifiers' harness loader.
"""

from __future__ import annotations

import argparse
import functools
import json
import traceback
from contextlib import AsyncExitStack
from typing import Any

import verifiers.v1 as vf
from verifiers.v1.dialects.chat import message_to_wire
from verifiers.v1.harnesses.utils.launch import CHAT_PROGRAM_SOURCE
from verifiers.v1.runtimes import ProgramResult

from vfcheck.episodes.runner import HARNESS_ID


@functools.cache
def chat_program() -> dict[str, Any]:
    """verifiers' bundled chat program, executed once as a module (not as `__main__`)."""
    namespace: dict[str, Any] = {"__name__": "vfcheck_chat_program"}
    exec(compile(CHAT_PROGRAM_SOURCE, "<verifiers chat program>", "exec"), namespace)
    return namespace


class FastChatConfig(vf.HarnessConfig):
    """No knobs: the program's own defaults (no bash, no compaction)."""


class FastChatHarness(vf.Harness[FastChatConfig]):
    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_MCP = True
    SUPPORTS_RESUME = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

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
        system, prompt = self.resolve_prompt(data)
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
        if isinstance(prompt, str):
            messages.append({"role": "user", "content": prompt})
        elif prompt:
            messages += [message_to_wire(m) for m in prompt]
        args = argparse.Namespace(
            base_url=endpoint, api_key=secret, model=ctx.model, system_prompt=system or "",
            prompt="", initial_messages_file="", mcp_config="", tool_interception_url="",
            bash=False, compaction=False, summarize_at_tokens=None, edit=False, search=False,
            serper_key="",
        )
        client = program["AsyncOpenAI"](
            base_url=endpoint, api_key=secret,
            timeout=program["httpx"].Timeout(None, connect=5.0),
        )
        try:
            async with AsyncExitStack() as stack:
                tools: list[dict[str, Any]] = []
                dispatch: dict[str, Any] = {}
                servers: dict[str, Any] = {}
                if mcp_urls:
                    config = {"mcpServers": {
                        name: {"url": url, "timeout": self.config.tool_timeout}
                        for name, url in mcp_urls.items()
                    }}
                    tools, dispatch, servers = await program["connect_mcp"](
                        config, stack, set()
                    )
                compactor = program["Compactor"](client, ctx.model, tools, False, None)
                compactor.note_good(messages)
                await program["run_chat_loop"](
                    args, compactor, messages, dispatch, servers, None
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
        return ProgramResult(exit_code=0, stdout=json.dumps({"messages": len(messages)}), stderr="")


__all__ = ["HARNESS_ID", "FastChatConfig", "FastChatHarness"]
