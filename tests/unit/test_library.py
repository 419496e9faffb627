"""The library suite's baseline logic on findings made here (the suite itself runs in
tests/integration/test_library.py)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from vfcheck._library import (
    apply_baseline,
    library_findings,
    shipped_baseline,
)
from vfcheck._library.baseline import Baseline, Entry, parse_baseline
from vfcheck._library.result import finding
from vfcheck._shared.compat import verifiers_version
from vfcheck._shared.findings import Finding

VERSION = verifiers_version()


SHIPPED = shipped_baseline(VERSION) if VERSION else None


ENTRIES: list[Entry] = list(SHIPPED.entries) if SHIPPED else []


def _entry(check: str, observed: str) -> Entry:
    return Entry(check, observed, "verifiers/v1/x.py:1", "x", "a known behaviour")


def test_a_baselined_finding_that_now_passes_is_reported_failed() -> None:
    passing = finding("preview.cancel.notified", "passed", "watchers are told",
                      observed="cleared 'call #1 error'")
    (judged,) = apply_baseline([passing], Baseline("0.4.0", (
        _entry("preview.cancel.notified", "no notify after the clear"),), "fake.toml"))
    assert judged.outcome == "failed"
    assert "no longer holds" in judged.message and "update the baseline" in judged.message


def test_a_baselined_failure_that_changed_shape_is_reported_failed() -> None:
    failing = finding("usage.paths.vf-eval.--resume:configs/eval.json", "failed", "elsewhere",
                      observed="wrote configs/other/eval.json")
    (judged,) = apply_baseline([failing], Baseline("0.4.0", (_entry(
        failing.check, "wrote configs/resolved/eval.json"),), "fake.toml"))
    assert judged.outcome == "failed" and "update the baseline" in judged.message


def test_a_new_failure_and_an_unmatched_entry_are_failed() -> None:
    new = finding("api.Trace.watch", "failed", "verifiers lacks Trace.watch", observed="x")
    judged = apply_baseline([new], Baseline("0.4.0", (_entry("api.gone", "y"),), "fake.toml"))
    assert [(f.check, f.outcome) for f in judged] == [("api.Trace.watch", "failed"),
                                                      ("api.gone", "failed")]
    assert "no such check ran" in judged[1].message


def test_a_baseline_entry_without_its_citation_is_refused() -> None:
    with pytest.raises(ValueError, match="lacks source"):
        parse_baseline({"verifiers": "0.4.0", "expected": [
            {"check": "a.b", "observed": "x", "quote": "q", "says": "s"}]}, "bad.toml")


def test_library_findings_applies_the_shipped_baseline(monkeypatch: pytest.MonkeyPatch) -> None:
    import vfcheck._library.suite as suite

    known = [finding(e.check, "failed", "known", observed=e.observed) for e in ENTRIES]
    fresh = finding("api.Trace.watch", "passed", "there", observed="present")

    async def collect(**_: Any) -> list[Finding]:
        return [replace(f) for f in (*known, fresh)]

    monkeypatch.setattr(suite, "collect", collect)
    env, findings = library_findings()
    assert env == f"verifiers@{VERSION}"
    assert [f.bad for f in findings] == [False] * len(findings)
    _, unbaselined = library_findings(baseline=False)
    assert sum(f.bad for f in unbaselined) == len(ENTRIES)
    monkeypatch.setattr(suite, "verifiers_version", lambda: "9.9.9")
    _, unknown = library_findings()
    assert all("no library baseline for verifiers 9.9.9" in f.message
               for f in unknown if f.bad)


async def test_library_findings_runs_from_inside_an_event_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import vfcheck._library.suite as suite

    async def collect(**_: Any) -> list[Finding]:
        return [finding("api.Trace.watch", "passed", "there", observed="present")]

    monkeypatch.setattr(suite, "collect", collect)
    env, findings = library_findings(baseline=False)  # a loop is running: uses a thread
    assert env == f"verifiers@{VERSION}" and [f.outcome for f in findings] == ["passed"]
