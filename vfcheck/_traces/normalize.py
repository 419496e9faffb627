"""Trace normalisation: what golden traces store and what the determinism check compares.

`normalize_trace` builds a compact *view* of `Trace.to_record()` and then applies the named
scrubbing `RULES`, to a fixed point. A view rather than a scrubbed raw dump, because most of
the dump is not the env's behaviour and would make every golden churn for reasons an env
author cannot act on (token streams, usage, the agent config, verifiers' version); the view
keeps what an env decides or a reviewer must see change. What it keeps and what each rule
replaces: docs/golden.md.

Nothing here imports verifiers: the input is the JSON record.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

JsonPath = tuple[str | int, ...]
"""Where a leaf sits in a JSON tree: keys and list indexes from the root."""


@dataclass(frozen=True)
class Rule:
    """One named scrubbing step over a JSON tree (docs/golden.md lists `RULES`)."""

    name: str
    description: str
    apply: Callable[[Any], Any]


def _walk(tree: Any, leaf: Callable[[JsonPath, Any], Any], path: JsonPath = ()) -> Any:
    """A copy of `tree` with every leaf replaced by `leaf(path, value)`."""
    if isinstance(tree, dict):
        return {key: _walk(value, leaf, (*path, key)) for key, value in tree.items()}
    if isinstance(tree, list):
        return [_walk(value, leaf, (*path, i)) for i, value in enumerate(tree)]
    return leaf(path, tree)


def _strings(rewrite: Callable[[str], str]) -> Callable[[Any], Any]:
    """A rule that rewrites every string leaf."""
    return lambda tree: _walk(tree, lambda _, v: rewrite(v) if isinstance(v, str) else v)


def _key(path: JsonPath) -> str:
    return path[-1] if path and isinstance(path[-1], str) else ""


# -- secrets

SECRET_KEY = re.compile(r"(api[_-]?key|authorization|token|secret|password)$", re.IGNORECASE)
"""Keys whose string values are credentials (`api_key`, `x-api-key`, `auth_token`)."""
_BEARER = re.compile(r"\b(Bearer|Basic)\s+(?!<secret>)[A-Za-z0-9._~+/=-]+")
_API_KEY = re.compile(r"\b(?:sk|pk|rk|hf|ghp|gho|xox[bp])[-_][A-Za-z0-9_-]{16,}")


def _scrub_secrets(tree: Any) -> Any:
    def leaf(path: JsonPath, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        if value and SECRET_KEY.search(_key(path)) and path[:1] != ("task",):
            return "<secret>"
        return _API_KEY.sub("<secret>", _BEARER.sub(r"\1 <secret>", value))

    return _walk(tree, leaf)


# -- versions

_VERSION_IN_TEXT = re.compile(r"\b(verifiers[ /=@-]v?)\d+\.\d+(?:\.\d+)?[\w.+-]*")


def _scrub_versions(tree: Any) -> Any:
    def leaf(path: JsonPath, value: Any) -> Any:
        if path[-2:] in (("verifiers", "version"), ("verifiers", "commit")) and value:
            return "<version>"
        if isinstance(value, str):
            return _VERSION_IN_TEXT.sub(r"\1<version>", value)
        return value

    return _walk(tree, leaf)


# -- temp paths


def _temp_roots() -> list[str]:
    """This machine's temp roots and verifiers' cache dir (`verifiers/v1/utils/paths.py`:
    `~/.cache/verifiers`), longest first; computed per call, never stored."""
    roots = {tempfile.gettempdir(), "/tmp", "/var/tmp"}
    try:
        roots.add(str(Path.home() / ".cache" / "verifiers"))
    except RuntimeError:
        pass
    return sorted((r.rstrip("/") for r in roots if r not in ("", "/")), key=len, reverse=True)


# Path patterns are bounded (`PATH_SEGMENTS` segments of at most 255 characters, a file
# name's limit): unbounded `(?:/[\w.]+)+` tried from every `/` of a long slash-separated
# run (base64, a PATH variable) is quadratic in its length (100 kB of `a/`: 30 s).
_ANY_VF_CACHE = re.compile(r"(?:/[\w.@+~-]{1,255}){1,32}/\.cache/verifiers(?=/|\b)")
_MACOS_TEMP = re.compile(r"(?:/private)?/var/folders/[\w+-]+/[\w+-]+/T(?=/|\b)")
_RANDOM_SEGMENTS = (
    # tempfile.mkdtemp(): `tmp` + 8 of [a-z0-9_]
    (re.compile(r"(<tmp>/(?:[^/\s\"']{1,255}/){0,32})tmp[a-z0-9_]{8}(?![\w])"),
     r"\1tmp<random>"),
    (re.compile(r"pytest-of-[^/\s\"']+/pytest-\d+"), "pytest-of-<user>/pytest-<n>"),
)


def _scrub_temp_paths(tree: Any) -> Any:
    # idempotence: `>` in the lookbehind keeps `<tmp>/tmp<random>` from a second scrub, and
    # `(?!<)` a random segment's own `/tmp<random>` (`<tmp>/a:/tmp<random>`, from
    # `/tmp/a:/tmpchatcmpl`)
    roots = [re.compile(rf"(?<![\w.~>-]){re.escape(root)}(?=/|\b)(?!<)")
             for root in _temp_roots()]

    def rewrite(text: str) -> str:
        if "/var/folders/" in text:
            text = _MACOS_TEMP.sub("<tmp>", text)
        if "/.cache/verifiers" in text:
            text = _ANY_VF_CACHE.sub("<tmp>", text)
        for root in roots:
            text = root.sub("<tmp>", text)
        # to a fixed point: the greedy path prefix lets one pass rename only the last of
        # several random segments (`<tmp>/tmpab12_xyz/tmp/tmpab12_xyz`)
        while "<tmp>" in text:
            before = text
            for pattern, replacement in _RANDOM_SEGMENTS:
                text = pattern.sub(replacement, text)
            if text == before:
                break
        return text

    return _strings(rewrite)(tree)


# -- ports

_LOOPBACK_PORT = re.compile(r"\b(127\.0\.0\.1|localhost|0\.0\.0\.0|\[::1\]):\d{1,5}\b")


def _scrub_ports(tree: Any) -> Any:
    def leaf(path: JsonPath, value: Any) -> Any:
        if _key(path) == "port" and isinstance(value, int) and not isinstance(value, bool):
            return "<port>"
        if isinstance(value, str):
            return _LOOPBACK_PORT.sub(r"\1:<port>", value)
        return value

    return _walk(tree, leaf)


# -- times

TIME_KEYS = frozenset({"start", "end", "duration", "t", "timestamp"})
TIME_CONTAINERS = frozenset({"timing", "time", "notify"})


def _scrub_times(tree: Any) -> Any:
    def leaf(path: JsonPath, value: Any) -> Any:
        key = _key(path)
        timed = key == "timestamp" or (
            key in TIME_KEYS and any(p in TIME_CONTAINERS for p in path[:-1])
        )
        if timed and isinstance(value, int | float) and not isinstance(value, bool):
            return "<time>" if value else value  # 0.0 = never stamped: keep it visible
        return value

    return _walk(tree, leaf)


# -- ids

ID_KEYS = frozenset({"id", "tool_call_id", "call_id", "trace_id", "session_id", "request_id"})
"""Keys whose values are minted ids, outside `task` (whose data is the env's own)."""
_MINTED = re.compile(r"(?=[^\d]*\d)[\w.:-]{8,}\Z")
"""What a minted id looks like: one token with a digit (not `vfcheck-chat`, not a path)."""
_ID_PATTERNS = (
    # `>` in the lookbehinds: text right after a placeholder was left alone by the first
    # pass and must be by the next (idempotence)
    r"(?<![0-9a-fA-F>])[0-9a-f]{32}(?![0-9a-fA-F])",  # uuid4().hex: trace ids
    r"(?<![0-9a-fA-F>-])[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}(?![0-9a-fA-F])",
    r"\b(?:call|chatcmpl|toolu|resp|msg)[_-](?=[A-Za-z]*\d)[A-Za-z0-9]{16,}\b",
)


def _scrub_ids(tree: Any) -> Any:
    known: set[str] = set()

    def collect(path: JsonPath, value: Any) -> Any:
        if (
            isinstance(value, str)
            and _key(path) in ID_KEYS
            and path[:1] != ("task",)
            and _MINTED.match(value)
        ):
            known.add(value)
        return value

    _walk(tree, collect)
    alternatives = [re.escape(v) for v in sorted(known, key=len, reverse=True)]
    pattern = re.compile("|".join([*alternatives, *_ID_PATTERNS]))
    placeholders: dict[str, str] = {}

    def placeholder(match: re.Match[str]) -> str:
        found = match.group(0)
        if found not in placeholders:
            placeholders[found] = f"<id:{len(placeholders) + 1}>"
        return placeholders[found]

    return _strings(lambda text: pattern.sub(placeholder, text))(tree)


RULES: tuple[Rule, ...] = (
    Rule(
        "secrets",
        "bearer tokens, API keys (`sk-...`) and values of credential keys (`api_key`, "
        "`authorization`, `token`, `secret`, `password`) -> `<secret>`",
        _scrub_secrets,
    ),
    Rule(
        "versions",
        "`verifiers.version` / `verifiers.commit`, and `verifiers/X.Y.Z` in text -> "
        "`<version>`",
        _scrub_versions,
    ),
    Rule(
        "temp-paths",
        "the temp dir, `/tmp`, macOS `/var/folders/.../T` and verifiers' cache dir "
        "(`~/.cache/verifiers`) -> `<tmp>`; mkdtemp and pytest basetemp names under it too",
        _scrub_temp_paths,
    ),
    Rule(
        "ports",
        "loopback `host:port` -> `host:<port>`; integer `port` values -> `<port>`",
        _scrub_ports,
    ),
    Rule(
        "times",
        "`start`/`end`/`duration`/`t` under `timing`/`time`/`notify`, and any `timestamp` "
        "-> `<time>` (0.0, never stamped, is kept)",
        _scrub_times,
    ),
    Rule(
        "ids",
        "trace, call and tool-call ids (values of id keys outside `task`, uuid hex, "
        "`call_...`) -> `<id:N>`, numbered by first appearance, everywhere they occur",
        _scrub_ids,
    ),
)
"""Applied in this order: secrets before ids, so a token that looks like an id is still
a secret; ids last, so their numbering does not depend on the other rules."""


MAX_PASSES = 4


def scrub(tree: Any, rules: Sequence[Rule] = RULES) -> Any:
    """`tree` with the rules applied in turn, repeated until nothing changes (a new tree;
    the input is not changed). One pass is not enough: a placeholder one rule writes can
    put a word boundary where another rule's pattern needs one (`/tmp4b84…` becomes
    `/tmp<id:1>`), so a single pass would not be idempotent."""
    for _ in range(MAX_PASSES):
        before = tree
        for rule in rules:
            tree = rule.apply(tree)
        if tree == before:
            break
    return tree


# -- the view


def _pruned(value: Any) -> Any:
    """`value` without null or empty entries, recursively (verifiers' TaskData defaults)."""
    if isinstance(value, dict):
        kept = {k: _pruned(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v is not None and v != {} and v != []}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


def _error(error: dict[str, Any] | None) -> dict[str, Any] | None:
    if error is None:
        return None
    return {k: error.get(k) for k in ("type", "message", "status_code")}


def _tool_name(tool: dict[str, Any]) -> str:
    namespace = tool.get("namespace")
    return f"{namespace}.{tool.get('name')}" if namespace else str(tool.get("name"))


def _message(index: int, node: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = node.get("message") or {}
    view: dict[str, Any] = {"role": message.get("role"), "content": message.get("content")}
    if message.get("reasoning_content") is not None:
        view["reasoning_content"] = message["reasoning_content"]
    if message.get("tool_calls"):
        view["tool_calls"] = [
            {"id": c.get("id"), "name": _tool_name(c), "arguments": c.get("arguments")}
            for c in message["tool_calls"]
        ]
    for key in ("tool_call_id", "name"):
        if message.get(key) is not None:
            view[key] = message[key]
    parent = node.get("parent")
    if parent != (index - 1 if index else None):
        view["parent"] = parent
    return view


def trace_view(record: dict[str, Any], notify: Sequence[dict[str, Any]] | None = None
               ) -> dict[str, Any]:
    """The compact view of a trace record (see the module doc), before scrubbing."""
    task = record.get("task") or {}
    agent = record.get("agent") or {}
    harness = ((agent.get("config") or {}).get("harness") or {}).get("id")
    timing = record.get("timing") or {}
    view: dict[str, Any] = {
        "id": record.get("id"),
        "task": {
            "type": task.get("type"),
            "key": task.get("key"),
            "data": _pruned(task.get("data")),
        },
        "agent": {"name": agent.get("name"), "harness": harness},
        "tools": [_tool_name(t) for t in record.get("tools") or []],
        "messages": [_message(i, n) for i, n in enumerate(record.get("nodes") or [])],
        "calls": [
            {
                "node": c.get("node"),
                "finish_reason": c.get("finish_reason"),
                "error": _error(c.get("error")),
            }
            for c in record.get("calls") or []
        ],
        "stop_condition": record.get("stop_condition"),
        "is_completed": record.get("is_completed"),
        "is_timeout": record.get("is_timeout"),
        "ok": record.get("ok"),
        "rewards": record.get("rewards"),
        "metrics": record.get("metrics"),
        "info": record.get("info"),
        "root_reply": record.get("root_reply"),
        "errors": [_error(e) for e in record.get("errors") or []],
        "timing": {
            stage: {"start": span.get("start", 0.0), "end": span.get("end", 0.0)}
            for stage, span in timing.items()
            if isinstance(span, dict)
        },
    }
    if notify is not None:
        view["notify"] = [event.get("label") for event in notify]
    # A JSON round trip: the view shares no object with the record.
    loaded: dict[str, Any] = json.loads(json.dumps(view, default=str))
    return loaded


def normalize_trace(record: dict[str, Any], notify: Sequence[dict[str, Any]] | None = None
                    ) -> dict[str, Any]:
    """`trace.to_record()` (and optionally its notify log, `NotifyEvent.as_dict()`s) as a
    stable, JSON-able dict: two plays of one task against one deterministic model give
    equal results."""
    normalized: dict[str, Any] = scrub(trace_view(record, notify))
    return normalized


# -- diff

_ABSENT = "(absent)"
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
SHOWN_CHARS = 80
"""Longest rendering of one value in a diff line."""


def trace_diff(old: Any, new: Any) -> list[str]:
    """One line per changed leaf, `path: old -> new` (`messages[2].content`,
    `rewards.echoed.score`). Lists are aligned first, so an inserted message is one
    `(absent) -> ...` line, not a shift of every later one; removed items are numbered as
    in `old`, added and changed ones as in `new`."""
    return [f"{path}: {was} -> {now}" for path, was, now in trace_changes(old, new)]


def trace_changes(old: Any, new: Any) -> list[tuple[str, str, str]]:
    """`trace_diff` as `(path, old, new)` triples, for reports that set the two sides
    side by side (each side shown as in the diff line)."""
    changes: list[tuple[str, str, str]] = []
    _diff(old, new, "", changes)
    return changes


def _join(path: str, key: str) -> str:
    if _IDENTIFIER.match(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key)}]"


def _diff(old: Any, new: Any, path: str, changes: list[tuple[str, str, str]]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in [*old, *(k for k in new if k not in old)]:
            where = _join(path, str(key))
            if key not in new:
                changes.append((where, _show(old[key]), _ABSENT))
            elif key not in old:
                changes.append((where, _ABSENT, _show(new[key])))
            else:
                _diff(old[key], new[key], where, changes)
        return
    if isinstance(old, list) and isinstance(new, list):
        if _fingerprint(old) == _fingerprint(new):  # by text: NaN equals NaN here
            return
        matcher = SequenceMatcher(
            a=[_fingerprint(v) for v in old], b=[_fingerprint(v) for v in new], autojunk=False
        )
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                continue
            paired = min(i2 - i1, j2 - j1)
            for k in range(paired):
                _diff(old[i1 + k], new[j1 + k], f"{path}[{j1 + k}]", changes)
            for k in range(i1 + paired, i2):
                changes.append((f"{path}[{k}]", _show(old[k]), _ABSENT))
            for k in range(j1 + paired, j2):
                changes.append((f"{path}[{k}]", _ABSENT, _show(new[k])))
        return
    if _fingerprint(old) != _fingerprint(new) or type(old) is not type(new):
        changes.append((path or "(root)", *_pair(old, new)))


def _fingerprint(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def _pair(old: Any, new: Any) -> tuple[str, str]:
    """`old`, `new` shown; two long strings are cut to a window around their first
    difference."""
    if not (isinstance(old, str) and isinstance(new, str)) or max(len(old), len(new)) <= 60:
        return _show(old), _show(new)
    first = next(
        (i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b),
        min(len(old), len(new)),
    )
    start = max(0, first - 20)

    def window(text: str) -> str:
        cut = text[start : first + 40]
        shown = json.dumps(cut, ensure_ascii=False)
        return ("…" if start else "") + shown + ("…" if first + 40 < len(text) else "")

    return window(old), window(new)
