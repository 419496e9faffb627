"""`vfcheck merge`: the JSON reports of a run's shards (a CI matrix, `--shard K/N`) joined
into one report, with the verdict and exit code one `vfcheck check` of every env would give.

Everything that could make the joined verdict a false green is refused, in one line naming
the file: a file that is missing or no vfcheck JSON report, an env checked in two reports,
reports of different verifiers versions or seeds, and, for sharded reports, a shard that
did not come (its job failed before writing) or shards of different splits.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vfcheck._shared.findings import EnvReport
from vfcheck._shared.paths import shown_path


class MergeError(ValueError):
    """Input that cannot be joined into one honest report, in one line."""


@dataclass
class Merged:
    reports: list[EnvReport] = field(default_factory=list)
    verifiers: str | None = None
    seed: int | None = None
    sources: list[str] = field(default_factory=list)
    """The files joined, as given."""


def read_report(path: Path) -> dict[str, Any]:
    """One shard's JSON report, checked to be one."""
    where = shown_path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise MergeError(f"{where}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise MergeError(f"{where}: cannot read it: {e}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise MergeError(f"{where}: not JSON ({e})") from None
    if not (isinstance(data, dict) and "vfcheck" in data and isinstance(data.get("envs"), list)):
        raise MergeError(f"{where}: not a vfcheck JSON report (no 'vfcheck' version and "
                         "'envs' list; write one with vfcheck check --json FILE)")
    return data


def merge(paths: list[Path]) -> Merged:
    """The reports at `paths`, joined; MergeError on what cannot be."""
    merged = Merged(sources=[str(p) for p in paths])
    seen: dict[str, str] = {}
    first: dict[str, tuple[Any, str]] = {}
    shards: dict[int, str] = {}
    split: tuple[int, list[str]] | None = None
    given: set[Path] = set()
    for path in paths:
        if path.resolve() in given:  # a shell glob and a name, or a name typed twice
            raise MergeError(f"{shown_path(path)}: given twice")
        given.add(path.resolve())
        data = read_report(path)
        where = shown_path(path)
        for key in ("verifiers", "seed"):
            value = data.get(key)
            if key in first and first[key][0] != value:
                raise MergeError(f"{where}: {key} {value!r}, but {first[key][1]} has "
                                 f"{first[key][0]!r}: these are not shards of one run")
            first.setdefault(key, (value, where))
        if (shard := data.get("shard")) is not None:
            split = _take_shard(shard, where, shards, split)
        for raw in data["envs"]:
            try:
                report = EnvReport.from_dict(raw)
            except (KeyError, TypeError, ValueError, AttributeError) as e:
                raise MergeError(f"{where}: an env that is no vfcheck env report "
                                 f"({type(e).__name__}: {e})") from None
            if report.id in seen:
                raise MergeError(f"env {report.id!r} is in both {seen[report.id]} and {where}: "
                                 "shards must not overlap")
            seen[report.id] = where
            merged.reports.append(report)
    if split is not None:
        count, envs = split
        missing = [f"{k}/{count}" for k in range(1, count + 1) if k not in shards]
        if missing:
            raise MergeError(f"shard(s) {', '.join(missing)} of this run are missing (got "
                             f"{', '.join(f'{k}/{count}' for k in sorted(shards))}): their "
                             "envs were never reported")
        unreported = sorted(set(envs) - set(seen))
        if unreported:
            raise MergeError(f"env(s) {', '.join(unreported)} of the run are in no report")
        order = {env: i for i, env in enumerate(envs)}
        merged.reports.sort(key=lambda r: (order.get(r.id, len(order)), r.id))
    merged.verifiers = first.get("verifiers", (None, ""))[0]
    merged.seed = first.get("seed", (None, ""))[0]
    return merged


def _take_shard(shard: Any, where: str, shards: dict[int, str],
                split: tuple[int, list[str]] | None) -> tuple[int, list[str]]:
    """Note one report's `shard` (`vfcheck._shared.shards.Shard.as_dict`); the run's split."""
    try:
        index, count, envs = int(shard["index"]), int(shard["count"]), list(shard["of"])
    except (KeyError, TypeError, ValueError) as e:
        raise MergeError(f"{where}: its 'shard' is not index, count and of ({e})") from None
    if split is not None and split != (count, envs):
        raise MergeError(f"{where}: shard {index}/{count} of other envs than the reports "
                         f"before it ({split[0]} shards of {len(split[1])} envs)")
    if index in shards:
        raise MergeError(f"{where}: shard {index}/{count} again (also {shards[index]})")
    shards[index] = where
    return count, envs
