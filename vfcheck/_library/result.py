"""The library suite's findings: env id `verifiers@<version>`, families, one constructor.

Every library finding is env-level (task None); its family is the check id's first part
(`usage.paths.vf-eval.--resume:configs/eval.json` -> `usage`). `details["observed"]` is a
short, stable statement of what was seen: the baseline matches on it, so a baselined
behaviour that changes shape is reported, not silently kept expected.
"""

from __future__ import annotations

from typing import Any

from vfcheck._shared.findings import Finding, Outcome

LIBRARY_FAMILIES: tuple[str, ...] = ("usage", "api", "lifecycle", "preview", "served")


def library_env_id(version: str | None) -> str:
    return f"verifiers@{version or 'unknown'}"


def finding(check: str, outcome: Outcome, message: str, **details: Any) -> Finding:
    family = check.split(".", 1)[0]
    if family not in LIBRARY_FAMILIES:
        raise ValueError(f"library check {check!r} is in no library family")
    return Finding(check, family, None, outcome, message, details)


def verdict(ok: bool) -> Outcome:
    return "passed" if ok else "failed"
