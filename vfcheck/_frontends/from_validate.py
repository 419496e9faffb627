"""`vfcheck check --from-validate RUN_DIR`: grade an existing `vf-validate` run.

`vf-validate` exits 0 whatever its outcomes; CI that already runs it gets vfcheck's verdict
and exit code from its run directory (`results.jsonl`, `summary.json`) without re-running
anything. Rows become the same `setup` / `gold` / `noop` findings `vfcheck check` makes.
Its `task_key` is the content hash (`cli/validate.py`: `selected_keys = [task.hash ...]`),
so a finding's key is the task's name when it has one, else the hash.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from vfcheck._shared.findings import EnvReport, Finding, TaskId
from vfcheck.checks._validate import row_finding


class RunDirError(ValueError):
    """The directory is not a readable vf-validate run: one line saying what and where."""


def read_run_dir(run_dir: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    if not run_dir.is_dir():
        raise RunDirError(f"{run_dir}: not a directory")
    summary_path, results_path = run_dir / "summary.json", run_dir / "results.jsonl"
    for path in (summary_path, results_path):
        if not path.is_file():
            raise RunDirError(f"{run_dir}: no {path.name} (is this a vf-validate run directory?)")
    try:
        summary = json.loads(summary_path.read_text())
    except json.JSONDecodeError as e:
        raise RunDirError(f"{summary_path}: not JSON ({e})") from e
    rows = []
    for number, line in enumerate(results_path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise RunDirError(
                f"{results_path}:{number}: truncated or invalid JSON line ({e.msg})") from e
        if not isinstance(row, dict) or "mode" not in row or "reason" not in row:
            raise RunDirError(f"{results_path}:{number}: not a vf-validate result row")
        rows.append(row)
    return summary, rows


def env_id_of(run_dir: Path) -> str:
    for name in ("configs/resolved/validate.json", "configs/validate.json"):
        path = run_dir / name
        if path.is_file():
            try:
                return str(json.loads(path.read_text())["taskset"]["id"])
            except (json.JSONDecodeError, KeyError, TypeError):
                break
    return run_dir.name


def grade(run_dir: Path) -> EnvReport:
    summary, rows = read_run_dir(run_dir)
    env_id = env_id_of(run_dir)
    findings: list[Finding] = []
    for row in sorted(rows, key=lambda r: r.get("task_position", r.get("index", 0)) or 0):
        raw_index = row.get("index")
        index = int(raw_index if raw_index is not None else row.get("task_position", 0))
        tid = TaskId(index, str(row.get("name") or row.get("task_key") or index))
        if row["mode"] == "all":
            for mode in ("gold", "noop"):
                if isinstance(row.get(mode), dict):
                    findings.append(row_finding(env_id, tid, mode, row[mode]))
        else:
            findings.append(row_finding(env_id, tid, row["mode"], row))
    missing = (summary.get("outcomes") or {}).get("missing", 0)
    if missing:
        findings.append(Finding(
            "load", "load", None, "error",
            f"env {env_id!r}: the vf-validate run is incomplete: {missing} task(s) have no row "
            f"(interrupted? resume it with vf-validate ... --resume)", {"summary": summary}))
    order = {"setup": 0, "gold": 1, "noop": 2}
    findings.sort(key=lambda f: (order.get(f.check, 9), f.task.index if f.task else -1))
    return EnvReport(id=env_id, harness="vf-validate", findings=findings,
                     tasks=sorted({f.task for f in findings if f.task}, key=lambda t: t.index))
