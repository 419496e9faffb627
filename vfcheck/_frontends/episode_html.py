"""One sampled episode in the HTML report: per trace (one per agent role), its notify
timeline as a strip, its conversation, its judge calls, its rewards and metrics.

It reads what the `episode` finding carries (`EpisodeResult.record`): per trace verifiers'
`trace.to_record()` (messages in `nodes`, model calls in `calls`, judge calls in
`info.judge_calls`, stage spans in `timing`) and the recorder's notify log
(`NotifyEvent.as_dict()`s), and turns it into plain data for `templates/episode.html.j2`,
which escapes all of it.
"""

from __future__ import annotations

import json
from typing import Any

from markupsafe import Markup

from vfcheck._episodes.recorder import STAGES  # stdlib only: no verifiers
from vfcheck._frontends.html_templates import macro
from vfcheck._shared.findings import Finding


def number(value: Any) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value:g}"
    return str(value)


def episode_html(element_id: str, finding: Finding, *, open_: bool, link: str) -> Markup:
    """The episode of an `episode` finding, folded unless `open_`; `link`: the finding's
    anchor."""
    record: dict[str, Any] = finding.details["episode"]
    task = record.get("task") or {}
    reward = record.get("reward")
    view = {
        "id": element_id, "open": open_, "link": link, "outcome": finding.outcome,
        "task_index": task.get("index"), "task_key": task.get("key"),
        "reward": "-" if reward is None else number(reward),
        "ok": "ok" if record.get("ok") else "not ok",
        "duration": number(record.get("duration", 0)),
        "errors": [str(e) for e in record.get("errors") or []],
        "traces": [_trace(entry.get("trace") or {}, entry.get("notify") or [])
                   for entry in record.get("traces") or [] if isinstance(entry, dict)],
    }
    return macro("episode.html.j2", "episode", view)


def _trace(trace: dict[str, Any], notify: list[dict[str, Any]]) -> dict[str, Any]:
    agent = trace.get("agent") or {}
    head = (f"agent {agent.get('name', '?')} · stop {trace.get('stop_condition')}"
            f" · ok {trace.get('ok')}" + (" · timed out" if trace.get("is_timeout") else ""))
    return {
        "head": head,
        "strip": timeline(trace.get("timing") or {}, notify),
        "messages": [_message(node.get("message") or {}) for node in trace.get("nodes") or []
                     if isinstance(node, dict)],
        "judge_calls": [_judge(call) for call in (trace.get("info") or {}).get("judge_calls")
                        or [] if isinstance(call, dict)],
        "scores": _scores(trace),
        "errors": [json.dumps(error, default=str) for error in trace.get("errors") or []],
    }


def _content(content: Any) -> list[str]:
    """A message's content, a box per part: text, or typed parts (text shown, others as
    JSON)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [part.get("text", "") if isinstance(part, dict) and part.get("type") == "text"
                else json.dumps(part, default=str) for part in content]
    return [json.dumps(content, default=str)]


def _message(message: dict[str, Any]) -> dict[str, Any]:
    role = str(message.get("role", "?"))
    return {
        "role": role,
        "css": role if role in ("system", "user", "assistant", "tool") else "other",
        "tool": ({"name": message.get("name") or "", "call_id": message.get("tool_call_id")}
                 if role == "tool" else None),
        "reasoning": message.get("reasoning_content"),
        "content": _content(message.get("content")),
        "tool_calls": [{"name": c.get("name"), "id": c.get("id"), "arguments": c.get("arguments")}
                       for c in message.get("tool_calls") or [] if isinstance(c, dict)],
    }


def _judge(call: dict[str, Any]) -> dict[str, Any]:
    request = call.get("request") or {}
    response = call.get("response") or {}
    return {
        "name": call.get("name"),
        "messages": [{"role": m.get("role"), "content": _content(m.get("content"))}
                     for m in request.get("messages") or [] if isinstance(m, dict)],
        "reply": _content((response.get("message") or {}).get("content")),
        "parsed": json.dumps(response["parsed"], default=str) if "parsed" in response else None,
    }


def _scores(trace: dict[str, Any]) -> list[dict[str, str]]:
    rows = []
    for name, reward in (trace.get("rewards") or {}).items():
        score = reward.get("score") if isinstance(reward, dict) else reward
        weight = reward.get("weight", 1) if isinstance(reward, dict) else 1
        rows.append({"kind": "reward", "name": str(name), "value": number(score),
                     "weight": number(weight)})
    for name, value in (trace.get("metrics") or {}).items():
        rows.append({"kind": "metric", "name": str(name), "value": number(value), "weight": ""})
    return rows


def timeline(timing: dict[str, Any], notify: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The trace's stage spans on one time axis (percent of the whole), with a tick per
    request preview and per recorded model call (an errored call apart); None without any
    time stamp."""
    spans: list[tuple[str, float, float]] = []
    for stage in STAGES:
        span = timing.get(stage)
        if isinstance(span, dict) and _positive(span.get("start")):
            stop: Any = span.get("end")
            spans.append((stage, float(span["start"]), float(stop) if _positive(stop) else 0.0))
    ticks: list[tuple[str, float, str]] = []
    for event in notify:
        label = str(event.get("label", ""))
        if not _positive(event.get("t")):
            continue
        if label == "preview":
            ticks.append(("preview", float(event["t"]), label))
        elif label.startswith("call #"):
            ticks.append(("call" if label.endswith(" ok") else "call-error",
                          float(event["t"]), label))
    stamps = [t for _, s, e in spans for t in (s, e) if t] + [t for _, t, _ in ticks]
    if not stamps:
        return None
    start, end = min(stamps), max(stamps)
    total = max(end - start, 1e-9)

    def at(t: float) -> float:
        return round(100 * (t - start) / total, 3)

    bars = []
    for stage, s, e in spans:
        shown_end = e or end  # a stage that never ended runs to the last stamp
        took_ms = f"{(shown_end - s) * 1000:.1f}"
        bars.append({"stage": stage, "left": at(s), "width": max(at(shown_end) - at(s), 0.0),
                     "took": f"{took_ms} ms" + ("" if e else " (no end)"), "took_ms": took_ms})
    return {
        "spans": bars,
        "ticks": [{"kind": kind, "left": min(at(t), 99.7), "label": label,
                   "at": f"{(t - start) * 1000:.1f}"} for kind, t, label in ticks],
        "previews": sum(k == "preview" for k, _, _ in ticks),
        "calls": sum(k != "preview" for k, _, _ in ticks),
        "total": f"{total * 1000:.1f}",
    }


def _positive(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0
