"""What an env's judge was asked and answered in a play, for the findings' details.

A judge verdict decides the reward of a judged env, so a finding that rests on an episode
says what its judge got: each call as verifiers recorded it on the trace
(`trace.info["judge_calls"]`: `Judge.complete` records the request and the response, even
when `parse` raised), or, for a check that keeps no trace (vf-validate's gold and noop), as
the scripted model answered it. Both read the same way: the judge's name, the last message
it was asked (clipped), and the text it answered. A reader (or a test) can then see that a
script's `judge_reply` reached every path, and in which format each verdict was said.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

ASKED_CHARS = 300
"""How much of the judge's prompt a finding keeps (its start: the instruction)."""


def judge_exchanges(traces: Iterable[Any]) -> list[dict[str, Any]]:
    """Each judge call recorded on `traces` (trace objects or their records), in order."""
    found = []
    for trace in traces:
        info = trace.get("info") if isinstance(trace, dict) else getattr(trace, "info", None)
        for call in (info or {}).get("judge_calls") or []:
            request = call.get("request") or {}
            message = (call.get("response") or {}).get("message") or {}
            found.append({"judge": call.get("name"), "model": request.get("model"),
                          "asked": clip(last_text(request.get("messages") or [])),
                          "answered": _text(message.get("content"))})
    return found


def model_judge_exchanges(model: Any, scope: Any) -> list[dict[str, Any]]:
    """The judge calls the scripted `model` answered in the play `scope` (an `EpisodeRef`),
    for a check that keeps no trace."""
    if model is None or scope is None:
        return []
    return [{"judge": None, "model": record.request.model,
             "asked": clip(record.request.prompt_text),
             "answered": record.reply.content}
            for record in model.judge_calls if record.request.episode is scope]


def last_text(messages: list[Any]) -> str:
    """The text of the last message of a judge request (its prompt, for a one-message
    judge)."""
    for message in reversed(messages):
        if isinstance(message, dict) and (text := _text(message.get("content"))):
            return text
    return ""


def clip(text: str) -> str:
    return text if len(text) <= ASKED_CHARS else text[: ASKED_CHARS - 3] + "..."


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""
