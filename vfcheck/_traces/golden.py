"""Golden traces: a sampled task's normalised trace, stored as `<golden dir>/<env>/<task>.json`.

An env author edits a prompt, a tool or a reward; the golden items show what that did to the
episodes as a diff of normalised traces (`vfcheck._traces.normalize`), before a training run finds
out. The file is written and read through `GoldenExtension`, a subclass of syrupy's JSON
extension, so a golden file is byte for byte what syrupy would write for the same data,
whichever front end (or Python, or `-n`) recorded it.

`<task>` is the task's stable identity: its own key where the env overrides `Task.key`,
else `data.id`, else the task index — never the content hash, which changes with the very
edits the diff must show. The check worker settles golden items (it compares, and writes
under `--snapshot-update` / `--golden-update`), so every reader of the run sees one verdict.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from syrupy.data import Snapshot, SnapshotCollection
from syrupy.extensions.json import JSONSnapshotExtension

from vfcheck._shared.findings import Outcome
from vfcheck._shared.paths import shown_path as shown_path  # where it lived first
from vfcheck._shared.paths import write_refusal
from vfcheck._traces.normalize import trace_changes

FORMAT = 1
"""The golden file layout; bump it (and re-record) when the header or view changes shape."""
NOT_COMPARED = (("header", "verifiers"),)
"""Header fields shown but not compared: recording with another verifiers is no change."""
SHOWN_DIFF_LINES = 12
SAFE_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")


def task_identity(task: Any) -> tuple[str, str]:
    """`(identity, source)`: the overridden `Task.key`, else `data.id`, else the index.

    verifiers' default `Task.key` is the content hash (`verifiers/v1/task.py`), so only an
    override counts as the task's own key."""
    from verifiers.v1 import Task

    if inspect.getattr_static(type(task), "key", None) is not inspect.getattr_static(Task, "key"):
        return str(task.key), "key"
    data_id = getattr(task.data, "id", None)
    if data_id is not None and str(data_id) != "":
        return str(data_id), "data.id"
    return str(task.data.idx), "index"


def file_stem(name: str) -> str:
    """`name` as one safe path segment: characters outside `[A-Za-z0-9._-]` become `_`."""
    stem = "".join(c if c in SAFE_CHARS else "_" for c in name).strip(".")
    return stem or "_"


def env_folder(golden_dir: Path, env_id: str) -> Path:
    return golden_dir / file_stem(env_id)


class GoldenExtension(JSONSnapshotExtension):
    """syrupy's JSON extension, addressed by (golden dir, env, task identity) instead of by
    test file and test name: vfcheck's items are not Python test functions, and a golden
    trace must keep its name when the env's tests move."""

    @classmethod
    def path_of(cls, golden_dir: Path, env_id: str, identity: str) -> Path:
        return env_folder(golden_dir, env_id) / f"{file_stem(identity)}.{cls.file_extension}"

    def read(self, path: Path) -> str | None:
        data = self.read_snapshot_data_from_location(
            snapshot_location=str(path), snapshot_name=path.stem, session_id="vfcheck")
        return None if data is None else str(data)

    def write(self, path: Path, text: str) -> None:
        collection = SnapshotCollection(location=str(path))
        collection.add(Snapshot(name=path.stem, data=text))
        path.parent.mkdir(parents=True, exist_ok=True)
        self.write_snapshot_collection(snapshot_collection=collection)


def golden_document(header: dict[str, Any], traces: Sequence[dict[str, Any]],
                    runner_error: str | None = None) -> dict[str, Any]:
    document: dict[str, Any] = {"header": {"format": FORMAT, **header}, "traces": list(traces)}
    if runner_error:
        document["runner_error"] = runner_error
    return document


def hide_content_hash(traces: list[dict[str, Any]], source: str) -> list[dict[str, Any]]:
    """Traces whose `task.key` is the content hash (not the task's own key) show `<hash>`:
    the hash moves with every edit of the task data, which the data diff already shows."""
    if source == "key":
        return traces
    for trace in traces:
        if isinstance(trace.get("task"), dict) and "key" in trace["task"]:
            trace["task"]["key"] = "<hash>"
    return traces


def golden_diff(stored: Any, current: Any) -> list[str]:
    """`trace_diff` of two golden documents, without the fields that are not compared."""
    return [f"{path}: {was} -> {now}" for path, was, now in golden_changes(stored, current)]


def golden_changes(stored: Any, current: Any) -> list[tuple[str, str, str]]:
    """`golden_diff` as `(path, golden, now)` triples (the HTML report's two columns)."""
    return trace_changes(_compared(stored), _compared(current))


def _compared(document: Any) -> Any:
    if not isinstance(document, dict):
        return document
    trimmed = json.loads(json.dumps(document))
    for section, key in NOT_COMPARED:
        if isinstance(trimmed.get(section), dict):
            trimmed[section].pop(key, None)
    return trimmed


@dataclass
class Settled:
    """A golden item's verdict: what the finding says and what happened to the file."""

    outcome: Outcome
    observed: str
    action: str
    """`matched`, `recorded`, `updated`, `missing`, `mismatch`, `corrupt` or `refused`."""
    diff: list[str] = field(default_factory=list)
    changes: list[tuple[str, str, str]] = field(default_factory=list)
    """The diff as `(path, golden, now)`: the finding's details carry it on a mismatch."""


@dataclass
class GoldenBook:
    """One env's golden folder and how this run treats it (`--snapshot-update`,
    `--vf-golden-strict`); `record` is the command line that records the env's goldens."""

    golden_dir: Path
    env_id: str
    update: bool = False
    strict: bool = False
    record: str = ""
    write_root: Path | None = None
    """Writes (recording, updating, removing unused files) land only below this folder
    (`CheckOptions.golden_write_root`), links resolved: a golden folder that links into
    another project is refused, not written through."""
    extension: GoldenExtension = field(default_factory=GoldenExtension)

    def path_of(self, identity: str) -> Path:
        return self.extension.path_of(self.golden_dir, self.env_id, identity)

    def refusal(self, path: Path) -> str | None:
        """Why `path` may not be written, or None."""
        return None if self.write_root is None else write_refusal(path, self.write_root)

    def remove(self, paths: Sequence[Path]) -> str | None:
        """Remove unused golden files; the refusal instead if one of them may not be."""
        for path in paths:
            if refused := self.refusal(path):
                return refused
        for path in paths:
            path.unlink(missing_ok=True)
        return None

    def settle(self, identity: str, document: dict[str, Any]) -> Settled:
        """Compare `document` with the stored golden trace (writing it when updating)."""
        path = self.path_of(identity)
        shown = shown_path(path)
        if self.update and (refused := self.refusal(path)):
            return Settled("error", refused, "refused")
        text = str(self.extension.serialize(document))
        stored_text = self.extension.read(path)
        if stored_text is None:
            if self.update:
                self.extension.write(path, text)
                return Settled("passed", f"recorded golden trace {shown}", "recorded")
            if self.strict:
                return Settled("failed", f"no golden trace at {shown} (--vf-golden-strict); "
                               f"record it with: {self.record}", "missing")
            return Settled("skipped", f"no golden trace yet at {shown}; record it with: "
                           f"{self.record}", "missing")
        try:
            stored = json.loads(stored_text)
        except ValueError as e:
            if self.update:
                self.extension.write(path, text)
                return Settled("passed", f"rewrote golden trace {shown} (it was not valid "
                               "JSON)", "updated")
            return Settled("failed", f"the golden file {shown} is not valid JSON ({e}); "
                           f"re-record it with: {self.record}", "corrupt")
        changes = golden_changes(stored, document)
        diff = [f"{path}: {was} -> {now}" for path, was, now in changes]
        if not diff:
            return Settled("passed", f"matches golden trace {shown}", "matched")
        if self.update:
            self.extension.write(path, text)
            return Settled("passed", f"updated golden trace {shown} ({len(diff)} change(s))",
                           "updated", diff)
        shown_lines = diff[:SHOWN_DIFF_LINES]
        more = len(diff) - len(shown_lines)
        return Settled(
            "failed",
            f"the normalised trace differs from the golden trace {shown} "
            f"({len(diff)} change(s), golden -> now):\n"
            + "\n".join(f"  {line}" for line in shown_lines)
            + (f"\n  (+{more} more)" if more > 0 else "")
            + f"\nIf the change is intended, update the golden trace with: {self.record}",
            "mismatch", diff, changes,
        )

    def unused(self, identities: Sequence[str]) -> list[Path]:
        """Golden files in this env's folder that belong to none of `identities`."""
        folder = env_folder(self.golden_dir, self.env_id)
        if not folder.is_dir():
            return []
        wanted = {self.path_of(i).name for i in identities}
        suffix = f".{self.extension.file_extension}"
        return sorted(p for p in folder.iterdir()
                      if p.is_file() and p.name.endswith(suffix) and p.name not in wanted)
