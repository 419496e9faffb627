"""Accepting a known finding: `allow` turns a failed finding into `expected`, with the reason
the user wrote, the way the library baseline does (pytest: xfail).

    [tool.vfcheck.allow]
    "vfc-echo::exploit.echo-prompt" = "the task is to repeat a phrase the prompt shows"

or `allow = ["exploit.echo-prompt"]`, or `--allow PATTERN[=REASON]` / `--vf-allow`. A
pattern is an fnmatch pattern over the finding's names: `check`, `check[task]`,
`env::check` and `env::check[task]` (the pytest node id), so `exploit.*`,
`vfc-echo::exploit.echo-prompt` and `reward.reachable[2]` all work. Only `failed` findings
are allowed: an `error` is vfcheck's, never the env's, and a pass needs no excuse.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping

from vfcheck._shared.findings import Finding

DEFAULT_REASON = "allowed in the vfcheck configuration"


def parse_allow(value: object, where: str) -> dict[str, str]:
    """`{pattern: reason}` from a `[tool.vfcheck] allow` value (a list of patterns, or a table
    of pattern -> reason) or the command line's `PATTERN[=REASON]` words. Raises ValueError
    naming `where` for anything else."""
    if isinstance(value, Mapping):
        items = list(value.items())
    elif isinstance(value, (list, tuple)):
        items = [_split(str(v)) if isinstance(v, str) else (v, None) for v in value]
    else:
        raise ValueError(f"{where}: allow must be a list of check patterns or a table of "
                         f"pattern = reason, not {type(value).__name__}")
    allowed: dict[str, str] = {}
    for pattern, reason in items:
        if not isinstance(pattern, str) or not pattern.strip():
            raise ValueError(f"{where}: an allow pattern must be a non-empty string, not "
                             f"{pattern!r}")
        if reason is not None and not isinstance(reason, str):
            raise ValueError(f"{where}: the reason for allow pattern {pattern!r} must be a "
                             f"string, not {type(reason).__name__}")
        allowed[pattern.strip()] = (reason or "").strip() or DEFAULT_REASON
    return allowed


def _split(word: str) -> tuple[str, str | None]:
    pattern, _, reason = word.partition("=")
    return pattern, reason or None


def names_of(env_id: str, finding: Finding) -> list[str]:
    base = [finding.check]
    if finding.task is not None:
        base.append(f"{finding.check}[{finding.task.index}]")
    return [*base, *(f"{env_id}::{name}" for name in base)]


def matching(env_id: str, finding: Finding, allowed: Mapping[str, str]) -> str | None:
    """The first pattern of `allowed` that names `finding`, if any."""
    names = names_of(env_id, finding)
    return next((p for p in allowed if any(fnmatch.fnmatchcase(n, p) for n in names)), None)


def apply_allow(env_id: str, finding: Finding, allowed: Mapping[str, str]) -> Finding:
    """`finding` as `expected` when it failed and a pattern allows it; else unchanged."""
    if finding.outcome != "failed" or not allowed:
        return finding
    pattern = matching(env_id, finding, allowed)
    if pattern is None:
        return finding
    return Finding(finding.check, finding.family, finding.task, "expected",
                   f"allowed ({allowed[pattern]}): {finding.message}",
                   {**finding.details, "allowed": {"pattern": pattern,
                                                   "reason": allowed[pattern]}})


def unknown_patterns(allowed: Iterable[str], check_ids: Iterable[str]) -> list[str]:
    """Patterns that can name no registered check (a typo allows nothing, silently)."""
    ids = list(check_ids)
    return [p for p in allowed
            if not any(fnmatch.fnmatchcase(i, p.split("::", 1)[-1].split("[", 1)[0])
                       for i in ids)]
