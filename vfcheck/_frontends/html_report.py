"""The HTML report (`vfcheck check --html FILE`, `pytest --vf-html FILE`): one
self-contained page, rendered from the JSON report's data.

Failures and errors come first, at the top of the page, whole; then per env the family x
check x task matrix (each cell links to its finding), the reward-probe table, each sampled
episode (`episode` findings carry the trace record and its notify log) and the other
findings, folded. The page loads nothing (CSS inlined, no script: `<details>` folds), so it
opens from a CI artifact with no network. The templates escape every value
(`html_templates`); this module only shapes the data.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from markupsafe import Markup

from vfcheck._frontends.episode_html import episode_html, number
from vfcheck._frontends.html_templates import macro, render
from vfcheck._frontends.outcome_grid import COUNT_ORDER, MARKS, counts_text, short_key
from vfcheck._frontends.report import node_name
from vfcheck._frontends.views import episode_linked
from vfcheck._shared.findings import EnvReport, Finding
from vfcheck._shared.paths import write_atomically

RENDERED_DETAILS = ("episode", "changes", "notify_log")
"""Details drawn as a view of their own, so left out of the raw-details dump."""
DUMP_LIMIT = 20_000
"""Characters of a finding's raw details shown (the JSON report has them whole)."""
KEY_LIMIT = 64
"""Characters of a task key in a matrix header (the whole key is its tooltip)."""


def _css() -> str:
    return resources.files("vfcheck._frontends").joinpath("report.css").read_text()


def write_html(path: Path, report: dict[str, Any]) -> None:
    write_atomically(path, render_html(report))


def render_html(report: dict[str, Any]) -> str:
    """The page for a JSON report (`vfcheck._frontends.report.json_report`)."""
    envs = [_env(number, EnvReport.from_dict(data), data)
            for number, data in enumerate(report.get("envs") or [])]
    return render("report.html.j2", css=Markup(_css()), envs=envs, outcomes=COUNT_ORDER,
                  vfcheck=report.get("vfcheck") or "?", verifiers=report.get("verifiers") or "?",
                  seed=report.get("seed"), interrupted=report.get("interrupted"),
                  not_run=sum(len(data.get("not_run") or []) for data in report.get("envs") or []))


def anchor(env_number: int, finding_number: int) -> str:
    """The id of a finding's section: numbers only, so no env text reaches an id."""
    return f"f{env_number}-{finding_number}"


def _guarded(render_part: Callable[..., Markup], *args: Any, **kwargs: Any) -> Markup:
    """`render_part(...)`, or a note where the data had a shape it did not expect (details
    come from env code and verifiers' records): one odd finding never costs the whole page."""
    try:
        return render_part(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - shown on the page instead
        return macro("parts.html.j2", "unreadable", f"{type(e).__name__}: {e}")


def _env(number: int, env: EnvReport, data: dict[str, Any]) -> dict[str, Any]:
    tiers = "; ".join(f"{t.get('role')}: {t.get('tier')} ({t.get('harness')}, "
                      f"{t.get('reason')})" for t in env.tiers)
    episodes = [(i, f) for i, f in enumerate(env.findings)
                if f.task is not None and isinstance(f.details.get("episode"), dict)]
    parts = [(f, _guarded(_finding, number, i, f, env)) for i, f in enumerate(env.findings)]
    rest = [f for f in env.findings if not f.bad]
    rest_counts = {o: sum(f.outcome == o for f in rest) for o in COUNT_ORDER}
    return {
        "number": number, "id": env.id, "harness": env.harness, "tiers": tiers,
        "counts": env.counts(), "counts_text": counts_text(env),
        "matrix": _matrix(number, env),
        "probes": _probes(data.get("reward_probes")),
        # failed episodes open, and the first one: a reader sees a conversation at once
        "episodes": [_guarded(episode_html, f"ep{number}-{f.task.index}", f,
                              open_=f.bad or k == 0, link=anchor(number, i))
                     for k, (i, f) in enumerate(episodes) if f.task is not None],
        "bad": [part for f, part in parts if f.bad],
        "rest": [part for f, part in parts if not f.bad],
        "rest_counts": ", ".join(f"{n} {o}" for o, n in rest_counts.items() if n),
    }


def _matrix(number: int, env: EnvReport) -> dict[str, Any]:
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
    families: dict[str, list[str]] = {}
    for check, family in checks.items():
        families.setdefault(family, []).append(check)
    rows = []
    for family, members in families.items():
        for k, check in enumerate(members):
            cells: list[dict[str, str] | None] = []
            for column in columns:
                if (check, column) not in where:
                    cells.append(None)
                    continue
                i = where[check, column]
                f = env.findings[i]
                cells.append({"outcome": f.outcome, "anchor": anchor(number, i),
                              "mark": MARKS.get(f.outcome, "?"),
                              "title": f"{node_name(f)} {f.outcome}: "
                                       f"{f.message.splitlines()[0][:200] if f.message else ''}"})
            rows.append({"family": family, "family_span": len(members) if k == 0 else 0,
                         "check": check, "cells": cells})
    return {"rows": rows, "marks": list(MARKS.items()),
            "columns": [{"task": c, "key": None if c is None else tasks[c],
                         "label": None if c is None else short_key(tasks[c], KEY_LIMIT)}
                        for c in columns]}


def _probes(probes: dict[str, dict[str, Any]] | None) -> dict[str, Any] | None:
    if not probes:
        return None
    tasks = sorted({int(t) for row in probes.values() for t in row})
    rows = []
    for probe, row in probes.items():
        values = []
        for t in tasks:
            value = row.get(str(t), "")
            values.append("-" if value is None else number(value))
        rows.append({"probe": probe, "cells": values})
    return {"tasks": tasks, "rows": rows}


def _finding(number: int, i: int, f: Finding, env: EnvReport) -> Markup:
    where = f"{env.id} · {f.family}" + (
        "" if f.task is None else f" · task {f.task.index} ({f.task.key})")
    link = None
    if f.task is not None and isinstance(f.details.get("episode"), dict):
        link = {"href": f"ep{number}-{f.task.index}", "text": "the episode"}
    elif f.task is not None and episode_linked(f.family) and any(
            g.check == "episode" and g.task == f.task for g in env.findings):
        link = {"href": f"ep{number}-{f.task.index}",
                "text": "the task's episode and its notify timeline"}
    rest = {k: v for k, v in f.details.items() if k not in RENDERED_DETAILS}
    dump = json.dumps(rest, indent=1, default=str, ensure_ascii=False) if rest else ""
    if len(dump) > DUMP_LIMIT:
        dump = dump[:DUMP_LIMIT] + "\n… (cut: the JSON report holds it whole)"
    changes = [c for c in f.details.get("changes") or []
               if isinstance(c, list | tuple) and len(c) == 3]
    logs = f.details.get("notify_log") or []
    view = {"anchor": anchor(number, i), "name": node_name(f), "outcome": f.outcome,
            "where": where, "message": f.message, "episode_link": link, "changes": changes,
            "notify_logs": [str(log) for log in logs], "dump": dump}
    return macro("parts.html.j2", "finding", view)
