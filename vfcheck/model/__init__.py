"""A scripted, OpenAI-compatible model: the one thing vfcheck mocks.

verifiers' interception server forwards every model request upstream with a plain
`httpx.AsyncClient`, always with `"stream": true` and an `X-Session-ID` header holding the
trace id (`verifiers/v1/clients/client.py`). A `ScriptedModel` answers that upstream
request, in-process under a respx router (`ScriptedModel.mock`) or on 127.0.0.1
(`ScriptedModel.serve`, `serve_forever`) for `vf-eval` in another process.

What to answer is a *policy*: `Callable[[ModelRequest], Reply | None]`, where None means "no
opinion, ask the next one" (see `first_of`). A `Reply` is text, tool calls, or a `Fault` to
inject. One module per idea: `types` (the vocabulary), `policies`, `schema_args` (tool
arguments from a JSON schema), `wire` (OpenAI's wire format), `core` (decide, record,
render), `transports` (respx, aiohttp, `serve_forever`).
"""

from __future__ import annotations

from vfcheck.model.core import DEFAULT_MODEL_ID
from vfcheck.model.policies import (
    HARNESS_BUILTIN_TOOLS,
    PolicyRouter,
    default_reply,
    first_of,
    fixed,
    from_function,
    per_task,
    sequence,
    tool_policy,
)
from vfcheck.model.schema_args import generate_arguments
from vfcheck.model.transports import DEFAULT_BASE_URL, ScriptedModel, serve_forever
from vfcheck.model.types import (
    HUGE_REPLY_CHARS,
    SESSION_ID_HEADER,
    Fault,
    ModelRequest,
    Policy,
    Reply,
    RequestRecord,
    TaskRef,
    ToolCall,
    WireResponse,
)

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_MODEL_ID",
    "HARNESS_BUILTIN_TOOLS",
    "HUGE_REPLY_CHARS",
    "SESSION_ID_HEADER",
    "Fault",
    "ModelRequest",
    "Policy",
    "PolicyRouter",
    "Reply",
    "RequestRecord",
    "ScriptedModel",
    "TaskRef",
    "ToolCall",
    "WireResponse",
    "default_reply",
    "first_of",
    "fixed",
    "from_function",
    "generate_arguments",
    "per_task",
    "sequence",
    "serve_forever",
    "tool_policy",
]
