"""Known behaviours of one verifiers version, held like strict xfails.

A baseline file (`baseline-<version>.toml`, shipped in this package) lists findings that
are known library behaviour of that version, each citing the verifiers file:line it comes
from. Applied to a run:

- a failed finding whose check and `observed` match an entry becomes `expected`;
- a failed finding whose entry expects another observation stays failed ("changed");
- a finding that now passes while its entry says it fails is failed ("no longer holds —
  update the baseline"), so a fixed library cannot keep a stale entry green;
- an entry that matches no finding at all is a failed finding of its own;
- anything not in the baseline is untouched (a new failure fails).

A baseline applies to its exact version only: line citations do not survive a release.
"""

from __future__ import annotations

import importlib.resources
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from vfcheck._library.result import finding
from vfcheck._shared.findings import Finding

BASELINE_PREFIX = "baseline-"


@dataclass(frozen=True)
class Entry:
    check: str
    observed: str
    """The finding's `details["observed"]` this entry expects."""
    source: str
    """Where in verifiers the behaviour comes from: `verifiers/v1/trace.py:462`."""
    quote: str
    """Text found at `source` (the tests verify the citation)."""
    says: str
    """The behaviour in one sentence."""


@dataclass(frozen=True)
class Baseline:
    version: str
    entries: tuple[Entry, ...]
    name: str
    """The file it came from (for messages)."""

    def entry(self, check: str) -> Entry | None:
        return next((e for e in self.entries if e.check == check), None)


def parse_baseline(data: dict[str, Any], name: str) -> Baseline:
    entries = []
    for i, raw in enumerate(data.get("expected", [])):
        missing = [k for k in ("check", "observed", "source", "quote", "says") if k not in raw]
        if missing:
            raise ValueError(f"{name}: expected[{i}] lacks {', '.join(missing)}")
        entries.append(Entry(str(raw["check"]), str(raw["observed"]), str(raw["source"]),
                             str(raw["quote"]), " ".join(str(raw["says"]).split())))
    checks = [e.check for e in entries]
    if len(set(checks)) != len(checks):
        raise ValueError(f"{name}: a check is listed twice")
    return Baseline(str(data["verifiers"]), tuple(entries), name)


def load_baseline(path: Path) -> Baseline:
    with path.open("rb") as f:
        return parse_baseline(tomllib.load(f), path.name)


def shipped_versions() -> list[str]:
    files = importlib.resources.files("vfcheck._library")
    return sorted(
        p.name.removeprefix(BASELINE_PREFIX).removesuffix(".toml")
        for p in files.iterdir()
        if p.name.startswith(BASELINE_PREFIX) and p.name.endswith(".toml")
    )


def shipped_baseline(version: str) -> Baseline | None:
    """The baseline vfcheck ships for `version`, if any."""
    resource = importlib.resources.files("vfcheck._library") / f"{BASELINE_PREFIX}{version}.toml"
    if not resource.is_file():
        return None
    return parse_baseline(tomllib.loads(resource.read_text(encoding="utf-8")), resource.name)


def apply_baseline(findings: list[Finding], baseline: Baseline) -> list[Finding]:
    """The findings with `baseline` applied (see the module doc); the input is not changed."""
    out: list[Finding] = []
    seen: set[str] = set()
    for f in findings:
        entry = baseline.entry(f.check)
        if entry is None:
            out.append(f)
            continue
        seen.add(f.check)
        out.append(_judge(f, entry, baseline))
    for entry in baseline.entries:
        if entry.check not in seen:
            out.append(finding(
                entry.check, "failed",
                f"{baseline.name} expects {entry.check} ({entry.says} — {entry.source}), but "
                "no such check ran — update the baseline",
                baseline=_cited(entry), observed="check absent"))
    return out


def _cited(entry: Entry) -> dict[str, str]:
    return {"check": entry.check, "observed": entry.observed, "source": entry.source,
            "says": entry.says}


def _judge(f: Finding, entry: Entry, baseline: Baseline) -> Finding:
    details = {**f.details, "baseline": _cited(entry)}
    observed = str(f.details.get("observed", ""))
    if f.outcome in ("skipped", "error"):
        return replace(f, details=details)
    if f.outcome == "failed" and observed == entry.observed:
        return replace(f, outcome="expected", details=details,
                       message=f"expected ({baseline.name}, {entry.source}): {f.message}")
    if f.outcome == "failed":
        message = (f"{baseline.name} says {entry.check} shows {entry.observed!r} "
                   f"({entry.source}), but it now shows {observed!r} — update the baseline: "
                   f"{f.message}")
    else:
        message = (f"{baseline.name} says {entry.says} ({entry.source}), but it no longer "
                   f"holds ({f.outcome}: {f.message}) — update the baseline")
    return replace(f, outcome="failed", message=message, details=details)
