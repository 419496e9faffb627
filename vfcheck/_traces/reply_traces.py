"""Reference conversations as traces, for a gold check (`Task.validate`) to score.

A gold check scores a reference reply with the task's own scoring: no model, no harness,
just a fresh `vf.Trace` of the task that holds the conversation. verifiers 0.4.0 offers no
public way to build one (`vf-validate` makes a bare trace inline), so every env copied the
same dozen lines; these are them, importable: `from vfcheck import reply_trace`.
verifiers is imported on first call, never with vfcheck.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["gold_trace", "reply_trace"]


def gold_trace(task: Any, messages: Sequence[Any]) -> Any:
    """A fresh `vf.Trace` of `task` carrying `messages` (verifiers message objects) as one
    chained conversation, assistant messages marked as sampled model turns, so
    `await task.score(trace)` runs the task's real scoring on it."""
    import verifiers.v1 as vf

    trace = vf.Trace(
        task=vf.TraceTask(type=type(task).__name__, data=task.data, key=task.key,
                          hash=task.hash),
        agent=vf.AgentInfo(config=vf.AgentConfig(), name="gold", trainable=False),
    )
    for i, message in enumerate(messages):
        trace.nodes.append(vf.MessageNode(message=message, parent=i - 1 if i else None,
                                          sampled=isinstance(message, vf.AssistantMessage)))
    return trace


def reply_trace(task: Any, reply: str) -> Any:
    """`gold_trace` of the task's prompt answered by one model `reply`:
    `await task.score(reply_trace(task, "olleh"))`, then read `trace.reward`."""
    import verifiers.v1 as vf

    return gold_trace(task, [vf.UserMessage(content=task.data.prompt_text),
                             vf.AssistantMessage(content=reply)])
