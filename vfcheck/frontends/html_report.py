"""The HTML report (`vfcheck check --html FILE`, `pytest --vf-html FILE`): one
self-contained page, rendered from the JSON report's data.

Per env: the family x check x task matrix, each cell linking to its finding; the reward-probe
table; each sampled episode (`episode` findings carry the trace record and its notify log)
with its conversation, rewards, metrics, judge calls and notify timeline; then every finding,
golden mismatches side by side. The page loads nothing (CSS inlined, no script: `<details>`
folds), so it opens from a CI artifact with no network. Every text that comes from an env
(keys, messages, replies, tool arguments) passes through `html.escape`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from vfcheck.findings import EnvReport, Finding
from vfcheck.frontends.episode_html import episode_html, esc
from vfcheck.frontends.episode_html import number as number_text
from vfcheck.frontends.outcome_grid import COUNT_ORDER, MARKS, counts_text, short_key
from vfcheck.frontends.report import node_name
from vfcheck.paths import write_atomically

RENDERED_DETAILS = ("episode", "changes", "notify_log")
"""Details drawn as a view of their own, so left out of the raw-details dump."""
EPISODE_VIEWS = ("lifecycle", "preview", "golden", "determinism", "robustness")
"""Families whose findings link to their task's episode (its notify timeline, its
conversation)."""
DUMP_LIMIT = 20_000
"""Characters of a finding's raw details shown (the JSON report has them whole)."""


def _css() -> str:
    return resources.files("vfcheck.frontends").joinpath("report.css").read_text()


def write_html(path: Path, report: dict[str, Any]) -> None:
    write_atomically(path, render_html(report))


def render_html(report: dict[str, Any]) -> str:
    """The page for a JSON report (`vfcheck.frontends.report.json_report`)."""
    envs = [_env_of(data) for data in report.get("envs") or []]
    meta = (f"vfcheck {esc(report.get('vfcheck') or '?')} · verifiers "
            f"{esc(report.get('verifiers') or '?')} · seed {esc(report.get('seed'))}")
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>vfcheck report: {esc(', '.join(e.id for e, _ in envs))}</title>",
             f"<style>{_css()}</style></head><body>",
             '<h1>vfcheck report</h1>', f'<p class="meta">{meta}</p>',
             _summary(envs)]
    for number, (env, data) in enumerate(envs):
        parts.append(_env_section(number, env, data))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _env_of(data: dict[str, Any]) -> tuple[EnvReport, dict[str, Any]]:
    return EnvReport.from_dict(data), data


def _summary(envs: list[tuple[EnvReport, dict[str, Any]]]) -> str:
    order = COUNT_ORDER
    rows = ["<table class=\"summary\"><tr><th>env</th>"
            + "".join(f"<th>{o}</th>" for o in order) + "</tr>"]
    for number, (env, _) in enumerate(envs):
        counts = env.counts()
        rows.append(f'<tr><td><a href="#env{number}">{esc(env.id)}</a></td>' + "".join(
            f'<td>{counts[o]}</td>' for o in order) + "</tr>")
    return "".join(rows) + "</table>"


def _guarded(render: Callable[..., str], *args: Any, **kwargs: Any) -> str:
    """`render(...)`, or a note where the data had a shape it did not expect (details come
    from env code and verifiers' records): one odd finding never costs the whole page."""
    try:
        return render(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - shown on the page instead
        return (f'<p class="meta">vfcheck could not draw this part ({esc(type(e).__name__)}: '
                f"{esc(e)}); the JSON report holds it</p>")


def anchor(env_number: int, finding_number: int) -> str:
    """The id of a finding's section: numbers only, so no env text reaches an id."""
    return f"f{env_number}-{finding_number}"


def _env_section(number: int, env: EnvReport, data: dict[str, Any]) -> str:
    tiers = "; ".join(f"{t.get('role')}: {t.get('tier')} ({t.get('harness')}, "
                      f"{t.get('reason')})" for t in env.tiers)
    parts = [f'<section class="env" id="env{number}">',
             f"<h2>{esc(env.id)}: {esc(counts_text(env))}</h2>",
             f'<p class="meta">harness {esc(env.harness)}'
             + (f" · tiers: {esc(tiers)}" if tiers else "") + "</p>",
             "<h3>Outcome matrix</h3>", _matrix(number, env)]
    if probes := data.get("reward_probes"):
        parts += ["<h3>Reward probes (policy &times; task &rarr; reward)</h3>",
                  _probe_table(probes)]
    episodes = [(i, f) for i, f in enumerate(env.findings)
                if f.task is not None and isinstance(f.details.get("episode"), dict)]
    if episodes:
        parts.append("<h3>Sampled episodes</h3>")
        # failed episodes open, and the first one: a reader sees a conversation at once
        parts += [_guarded(episode_html, f"ep{number}-{f.task.index}", f,
                           open_=f.bad or k == 0, link=anchor(number, i))
                  for k, (i, f) in enumerate(episodes) if f.task is not None]
    parts.append("<h3>Findings</h3>")
    parts += [_guarded(_finding, number, i, f, env) for i, f in enumerate(env.findings)]
    parts.append("</section>")
    return "\n".join(parts)


def _matrix(number: int, env: EnvReport) -> str:
    """A row per check (grouped by family), a column for the env's own findings and one
    per task; each cell is the finding's mark, coloured by its outcome, linking to it."""
    checks: dict[str, str] = {}  # check -> family, in report order
    tasks: dict[int, str] = {}
    where: dict[tuple[str, int | None], int] = {}
    for i, f in enumerate(env.findings):
        checks.setdefault(f.check, f.family)
        if f.task is not None:
            tasks.setdefault(f.task.index, f.task.key)
        where.setdefault((f.check, None if f.task is None else f.task.index), i)
    columns: list[int | None] = [None] if any(k[1] is None for k in where) else []
    columns += sorted(tasks)
    head = "".join(
        "<th>env</th>" if c is None else
        f'<th title="{esc(tasks[c])}">{c}<br><small>{esc(short_key(tasks[c], 16))}</small></th>'
        for c in columns)
    rows = [f'<table class="matrix"><tr><th>family</th><th>check</th>{head}</tr>']
    families: dict[str, list[str]] = {}
    for check, family in checks.items():
        families.setdefault(family, []).append(check)
    for family, members in families.items():
        for k, check in enumerate(members):
            row = (f'<td class="family" rowspan="{len(members)}">{esc(family)}</td>'
                   if k == 0 else "")
            row += f"<td>{esc(check)}</td>"
            for column in columns:
                if (check, column) not in where:
                    row += '<td class="slot"></td>'
                    continue
                i = where[check, column]
                f = env.findings[i]
                title = f"{node_name(f)} {f.outcome}: {f.message.splitlines()[0][:200]}"
                row += (f'<td class="slot"><a class="cell {f.outcome}" '
                        f'href="#{anchor(number, i)}" title="{esc(title)}">'
                        f"{MARKS.get(f.outcome, '?')}</a></td>")
            rows.append(f"<tr>{row}</tr>")
    rows.append("</table>")
    legend = " ".join(f'<span class="badge {o}">{m} {o}</span>' for o, m in MARKS.items())
    return "".join(rows) + f'<p class="legend">{legend}</p>'


def _probe_table(probes: dict[str, dict[str, Any]]) -> str:
    tasks = sorted({int(t) for row in probes.values() for t in row})
    rows = ["<table class=\"probes\"><tr><th>probe</th>"
            + "".join(f"<th>task {t}</th>" for t in tasks) + "</tr>"]
    for probe, row in probes.items():
        cells = ""
        for t in tasks:
            value = row.get(str(t), "")
            cells += "<td>" + ("-" if value is None else number_text(value)) + "</td>"
        rows.append(f"<tr><td>{esc(probe)}</td>{cells}</tr>")
    return "".join(rows) + "</table>"


def _finding(number: int, i: int, f: Finding, env: EnvReport) -> str:
    task = "" if f.task is None else f" · task {f.task.index} ({esc(f.task.key)})"
    parts = [f'<div class="finding {f.outcome}" id="{anchor(number, i)}">',
             f'<p><b>{esc(node_name(f))}</b> <span class="badge {f.outcome}">{f.outcome}'
             f"</span> <span class=\"meta\">{esc(f.family)}{task}</span></p>",
             f"<pre>{esc(f.message)}</pre>"]
    if f.task is not None and isinstance(f.details.get("episode"), dict):
        parts.append(f'<p><a href="#ep{number}-{f.task.index}">the episode</a></p>')
    elif f.task is not None and f.family in EPISODE_VIEWS and any(
            g.check == "episode" and g.task == f.task for g in env.findings):
        parts.append(f'<p><a href="#ep{number}-{f.task.index}">the task\'s episode and its '
                     "notify timeline</a></p>")
    if changes := f.details.get("changes"):
        parts.append(_sides(changes))
    if logs := f.details.get("notify_log"):
        parts.append("<details><summary>notify log</summary>"
                     + "".join(f"<pre>{esc(log)}</pre>" for log in logs) + "</details>")
    rest = {k: v for k, v in f.details.items() if k not in RENDERED_DETAILS}
    if rest:
        text = json.dumps(rest, indent=1, default=str, ensure_ascii=False)
        if len(text) > DUMP_LIMIT:
            text = text[:DUMP_LIMIT] + "\n… (cut: the JSON report holds it whole)"
        parts.append(f"<details><summary>details</summary><pre>{esc(text)}</pre></details>")
    parts.append("</div>")
    return "\n".join(parts)


def _sides(changes: list[Any]) -> str:
    """A golden mismatch: each changed field, the golden trace's value beside now's."""
    rows = ['<table class="sides"><tr><th>field</th><th>golden</th><th>now</th></tr>']
    for change in changes:
        if isinstance(change, list | tuple) and len(change) == 3:
            path, golden, now = change
            rows.append(f'<tr><td class="path">{esc(path)}</td><td class="golden">'
                        f'{esc(golden)}</td><td class="now">{esc(now)}</td></tr>')
    return "".join(rows) + "</table>"

