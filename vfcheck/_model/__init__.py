"""A scripted, OpenAI-compatible model: the one thing vfcheck mocks.

verifiers' interception server forwards every model request upstream with a plain
`httpx.AsyncClient`, always with `"stream": true` and an `X-Session-ID` header holding the
trace id (`verifiers/v1/clients/client.py`). A `ScriptedModel` answers that upstream
request, in-process under a respx router (`ScriptedModel.mock`) or on 127.0.0.1
(`ScriptedModel.serve`, `serve_forever`) for `vf-eval` in another process.

What to answer is a *policy*: `Callable[[ModelRequest], Reply | None]`, where None means "no
opinion, ask the next one" (see `first_of`). A `Reply` is text, tool calls, or a `Fault` to
inject, or a judge's `Verdict`. A request without `X-Session-ID` is a judge call (env code
scoring an episode with `verifiers/v1/judge.py`), attributed to the `episode_scope` the
runner opened around the play; by default it gets the positive verdict, never an echo.

One module per idea: `types` (the vocabulary), `policies`, `schema_args` (tool arguments
from a JSON schema), `judges` (verdicts in the judge's labels), `scope` (which episode a
judge call belongs to), `wire` (OpenAI's wire format), `core` (decide, record, render),
`transports` (respx, aiohttp, `serve_forever`).
"""

from __future__ import annotations

from vfcheck._model.core import DEFAULT_MODEL_ID
from vfcheck._model.judges import (
    DEFAULT_VERDICT,
    FALLBACK_LABELS,
    default_judge_policy,
    judge_policy,
)
from vfcheck._model.policies import (
    HARNESS_BUILTIN_TOOLS,
    PolicyRouter,
    agent_only,
    default_reply,
    first_of,
    fixed,
    from_function,
    judge_only,
    per_task,
    sequence,
    tool_policy,
)
from vfcheck._model.schema_args import generate_arguments, takes_arguments
from vfcheck._model.scope import current_episode, episode_scope
from vfcheck._model.transports import DEFAULT_BASE_URL, ScriptedModel, serve_forever
from vfcheck._model.types import (
    HUGE_REPLY_CHARS,
    SESSION_ID_HEADER,
    EpisodeRef,
    Fault,
    ModelRequest,
    Policy,
    Reply,
    RequestKind,
    RequestRecord,
    TaskRef,
    ToolCall,
    Verdict,
    WireResponse,
)

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_MODEL_ID",
    "DEFAULT_VERDICT",
    "FALLBACK_LABELS",
    "HARNESS_BUILTIN_TOOLS",
    "HUGE_REPLY_CHARS",
    "SESSION_ID_HEADER",
    "EpisodeRef",
    "Fault",
    "ModelRequest",
    "Policy",
    "PolicyRouter",
    "Reply",
    "RequestKind",
    "RequestRecord",
    "ScriptedModel",
    "TaskRef",
    "ToolCall",
    "Verdict",
    "WireResponse",
    "agent_only",
    "current_episode",
    "default_judge_policy",
    "default_reply",
    "episode_scope",
    "first_of",
    "fixed",
    "from_function",
    "generate_arguments",
    "judge_only",
    "judge_policy",
    "per_task",
    "sequence",
    "serve_forever",
    "takes_arguments",
    "tool_policy",
]
