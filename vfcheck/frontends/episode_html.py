"""One sampled episode in the HTML report: per trace (one per agent role), its notify
timeline as a strip, its conversation, its judge calls, its rewards and metrics.

It reads what the `episode` finding carries (`EpisodeResult.record`): per trace verifiers'
`trace.to_record()` (messages in `nodes`, model calls in `calls`, judge calls in
`info.judge_calls`, stage spans in `timing`) and the recorder's notify log
(`NotifyEvent.as_dict()`s). Everything from the env is escaped.
"""

from __future__ import annotations

import html
import json
from typing import Any

from vfcheck.episodes.recorder import STAGES  # stdlib only: no verifiers
from vfcheck.findings import Finding


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def number(value: Any) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value:g}"
    return esc(value)


def episode_html(element_id: str, finding: Finding, *, open_: bool, link: str) -> str:
    """The episode of an `episode` finding, folded unless `open_`; `link`: the finding's
    anchor."""
    record: dict[str, Any] = finding.details["episode"]
    task = record.get("task") or {}
    reward = record.get("reward")
    errors = [str(e) for e in record.get("errors") or []]
    summary = (f"task {esc(task.get('index'))} ({esc(task.get('key'))}) · reward "
               f"{'-' if reward is None else number(reward)} · "
               f"{'ok' if record.get('ok') else 'not ok'} · "
               f"{number(record.get('duration', 0))} s")
    parts = [f'<details class="episode" id="{element_id}"{" open" if open_ else ""}>',
             f"<summary><b>episode</b> {summary} "
             f'<span class="badge {finding.outcome}">{finding.outcome}</span></summary>',
             f'<p><a href="#{link}">the finding</a></p>']
    if errors:
        parts.append("<p><b>errors</b></p>" + "".join(f"<pre>{esc(e)}</pre>" for e in errors))
    for entry in record.get("traces") or []:
        if isinstance(entry, dict):
            parts.append(_trace_html(entry.get("trace") or {}, entry.get("notify") or []))
    parts.append("</details>")
    return "\n".join(parts)


def _trace_html(trace: dict[str, Any], notify: list[dict[str, Any]]) -> str:
    agent = trace.get("agent") or {}
    head = (f"agent {esc(agent.get('name', '?'))} · stop {esc(trace.get('stop_condition'))}"
            f" · ok {esc(trace.get('ok'))}" + (" · timed out" if trace.get("is_timeout") else ""))
    parts = [f'<div class="trace"><p class="meta">{head}</p>',
             "<p><b>notify timeline</b></p>", timeline_strip(trace.get("timing") or {}, notify),
             "<p><b>conversation</b></p>"]
    parts += [_message_html(node.get("message") or {}) for node in trace.get("nodes") or []
              if isinstance(node, dict)]
    for call in (trace.get("info") or {}).get("judge_calls") or []:
        if isinstance(call, dict):
            parts.append(_judge_html(call))
    parts.append(_scores_html(trace))
    for error in trace.get("errors") or []:
        parts.append(f"<pre>error: {esc(json.dumps(error, default=str))}</pre>")
    parts.append("</div>")
    return "\n".join(parts)


def _content(content: Any) -> str:
    """A message's content: text, or typed parts (text shown, others as JSON)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return f"<pre>{esc(content)}</pre>"
    if isinstance(content, list):
        return "".join(
            f"<pre>{esc(part.get('text', ''))}</pre>"
            if isinstance(part, dict) and part.get("type") == "text" else
            f"<pre>{esc(json.dumps(part, default=str))}</pre>" for part in content)
    return f"<pre>{esc(json.dumps(content, default=str))}</pre>"


def _message_html(message: dict[str, Any]) -> str:
    role = str(message.get("role", "?"))
    css = role if role in ("system", "user", "assistant", "tool") else "other"
    label = f'<span class="role">{esc(role)}</span>'
    if role == "tool":
        label += (f' <span class="meta">{esc(message.get("name") or "")} (call '
                  f'{esc(message.get("tool_call_id"))})</span>')
    parts = [f'<div class="msg {css}">{label}']
    if reasoning := message.get("reasoning_content"):
        parts.append(f"<details><summary>reasoning</summary><pre>{esc(reasoning)}</pre>"
                     "</details>")
    parts.append(_content(message.get("content")))
    for call in message.get("tool_calls") or []:
        if isinstance(call, dict):
            parts.append(f'<div class="toolcall">tool call <code>{esc(call.get("name"))}</code>'
                         f' (id {esc(call.get("id"))})<pre>{esc(call.get("arguments"))}</pre>'
                         "</div>")
    parts.append("</div>")
    return "".join(parts)


def _judge_html(call: dict[str, Any]) -> str:
    request = call.get("request") or {}
    response = call.get("response") or {}
    parts = [f'<div class="msg judge"><span class="role">judge call · '
             f"{esc(call.get('name'))}</span>"]
    for message in request.get("messages") or []:
        if isinstance(message, dict):
            parts.append(f"<p class=\"meta\">{esc(message.get('role'))}</p>"
                         + _content(message.get("content")))
    reply = (response.get("message") or {}).get("content")
    parts.append("<p class=\"meta\">judge replied</p>" + _content(reply))
    if "parsed" in response:
        parts.append(f"<p class=\"meta\">parsed: {esc(json.dumps(response['parsed'], default=str))}"
                     "</p>")
    parts.append("</div>")
    return "".join(parts)


def _scores_html(trace: dict[str, Any]) -> str:
    rows = []
    for name, reward in (trace.get("rewards") or {}).items():
        score = reward.get("score") if isinstance(reward, dict) else reward
        weight = reward.get("weight", 1) if isinstance(reward, dict) else 1
        rows.append(f"<tr><td>reward</td><td>{esc(name)}</td><td>{number(score)}</td>"
                    f"<td>{number(weight)}</td></tr>")
    for name, value in (trace.get("metrics") or {}).items():
        rows.append(f"<tr><td>metric</td><td>{esc(name)}</td><td>{number(value)}</td>"
                    "<td></td></tr>")
    if not rows:
        return '<p class="meta">no rewards or metrics recorded</p>'
    return ('<table class="scores"><tr><th></th><th>name</th><th>value</th><th>weight</th>'
            "</tr>" + "".join(rows) + "</table>")


def timeline_strip(timing: dict[str, Any], notify: list[dict[str, Any]]) -> str:
    """The trace's stage spans on one time axis, with a tick per request preview and per
    recorded model call (an errored call in red); the numbers under it in words."""
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
        return '<p class="meta">no timing recorded</p>'
    start, end = min(stamps), max(stamps)
    total = max(end - start, 1e-9)

    def at(t: float) -> float:
        return round(100 * (t - start) / total, 3)

    bars = []
    for stage, s, e in spans:
        shown_end = e or end  # a stage that never ended runs to the last stamp
        took = f"{(shown_end - s) * 1000:.1f} ms" + ("" if e else " (no end)")
        bars.append(f'<span class="span {stage}" style="left:{at(s)}%;width:'
                    f'{max(at(shown_end) - at(s), 0.0)}%" title="{stage} {took}"></span>')
    for kind, t, label in ticks:
        bars.append(f'<span class="tick {kind}" style="left:{min(at(t), 99.7)}%" '
                    f'title="{esc(label)} at +{(t - start) * 1000:.1f} ms"></span>')
    words = " ".join(
        f'<span class="key span {stage}"></span>{stage} '
        f"{((e or end) - s) * 1000:.1f} ms" for stage, s, e in spans)
    words += (f' <span class="key tick preview"></span>{sum(k == "preview" for k, _, _ in ticks)}'
              f' preview <span class="key tick call"></span>'
              f'{sum(k != "preview" for k, _, _ in ticks)} call(s)'
              f" · {total * 1000:.1f} ms in all")
    return f'<div class="strip">{"".join(bars)}</div><p class="legend">{words}</p>'


def _positive(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0
