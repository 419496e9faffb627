"""Cassettes: what a real model replied, recorded as a vfcheck script for offline replay.

`vfcheck record ENV --base-url URL -o FILE` plays the env's first tasks against a real
OpenAI-compatible endpoint with the ordinary runner (`run_episodes`, as `vfcheck run
--base-url` does) and reads each episode's model replies back from its trace: verifiers
records every model call in `trace.calls` (its `node` is the reply's message node, or it
carries the call's `error`), in request order, which is the script's turn order (turn N is
the session's Nth model request). The replies become `[[task]]` tables matched by task key,
with `fallback = "error"`: replaying the file with `--script FILE` needs no endpoint, gives
the recorded replies back, and a request it does not hold is a 404 naming the task and
the turn (vcrpy's record mode `none`) instead of a made-up answer.

Like vcrpy's filters, scrubbing happens before anything is written: the API key's value,
and whatever the normaliser's `secrets` rule matches (bearer tokens, `sk-...` keys, values of
credential keys in tool arguments) become `<secret>`; the endpoint is named by its host only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from vfcheck._episodes.offline import DEFAULT_API_KEY_VAR
from vfcheck._model import Fault, RequestRecord
from vfcheck._model.script import PLACEHOLDERS, SCRIPT_MISS, Script, ScriptError
from vfcheck._shared.this_machine import url_is_this_machine
from vfcheck._traces.normalize import RULES, scrub

if TYPE_CHECKING:
    from vfcheck._episodes.runner import EpisodeResult
    from vfcheck._episodes.tiers import HarnessTier, RoleTier

__all__ = [
    "DEFAULT_API_KEY_VAR",
    "ApiKeyMissing",
    "RecordError",
    "RecordedTask",
    "Recording",
    "api_key_for",
    "cassette_text",
    "misses",
    "placeholder_notes",
    "record",
    "recorded_task",
    "scrub_text",
    "scrub_turns",
    "write_cassette",
]

SECRET = "<secret>"
_SECRET_RULES = tuple(rule for rule in RULES if rule.name == "secrets")


class RecordError(Exception):
    """Recording cannot start or produced nothing; `str()` is one line saying why."""


class ApiKeyMissing(RecordError):
    """The API key's variable is unset for a remote endpoint: a usage error."""


@dataclass
class RecordedTask:
    """One task's recorded turns (script turn tables) and what the recording noticed."""

    index: int
    key: str
    turns: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def api_key_for(var: str, base_url: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The API key `var` holds. An unset or empty var is an error, except for an endpoint
    on this machine (`vfcheck._shared.this_machine`; a local server: `vfcheck mock-server`, vLLM,
    Ollama), which gets verifiers' `EMPTY` (`configs/client.py:resolve_api_key`); then
    None."""
    value = (os.environ if environ is None else environ).get(var) or None
    if value is None and not url_is_this_machine(base_url):
        raise ApiKeyMissing(
            f"${var} is not set: export the endpoint's API key in it, or name another "
            "variable with --api-key-var VAR (a loopback endpoint needs none)"
        )
    return value


def recorded_task(index: int, key: str, trace_records: Sequence[Mapping[str, Any]],
                  errors: Sequence[str] = ()) -> RecordedTask:
    """The turns of an episode's first trace (its `to_record()` dump). A multi-agent
    episode has a trace per agent; a script matches turns by task, not by agent, so the
    others replay the first agent's turns (noted). `errors` are the episode's own."""
    task = RecordedTask(index, key)
    if not trace_records:
        task.notes.append("no trace was recorded" + (f": {errors[0]}" if errors else ""))
        return task
    task.turns, stopped = turns_of_trace(trace_records[0])
    task.notes += [f"call {number} failed upstream (status {turn['status']}): recorded as a "
                   "status fault, which the replay meets too"
                   for number, turn in enumerate(task.turns) if "fault" in turn]
    if stopped:
        task.notes.append(stopped)
    if len(trace_records) > 1:
        task.notes.append(f"{len(trace_records)} traces (one per agent): the cassette holds the "
                          "first one's turns, which every agent of the task replays")
    if errors and not task.turns:
        task.notes.append(f"the episode failed: {errors[0]}")
    return task


def turns_of_trace(record: Mapping[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
    """Script turn tables from one trace dump, in call order; a failed call is a status
    fault (so the replay meets the same failure); the second value says why the turns
    stop early (a call with neither reply nor error: cancelled, or timed out)."""
    nodes = record.get("nodes") or []
    turns: list[dict[str, Any]] = []
    for number, call in enumerate(record.get("calls") or []):
        error = call.get("error")
        node = call.get("node")
        if error:
            turns.append({"fault": Fault.STATUS.value, "status": _status_of(error)})
            continue
        reply = nodes[node] if isinstance(node, int) and 0 <= node < len(nodes) else None
        message = reply.get("message") if isinstance(reply, Mapping) else None
        if not isinstance(message, Mapping):
            return turns, f"call {number} has no reply (cancelled or timed out): not recorded"
        turns.append(_turn_of(message))
    return turns, None


def _status_of(error: Any) -> int:
    for name in ("status_code", "status"):
        value = error.get(name) if isinstance(error, Mapping) else None
        if isinstance(value, int) and 400 <= value <= 599:
            return value
    return 500


def _turn_of(message: Mapping[str, Any]) -> dict[str, Any]:
    """An assistant message as a script turn: `reply`, and `tool` + `raw_arguments` (one
    call) or `calls` (several); arguments are kept verbatim, as the model sent them."""
    turn: dict[str, Any] = {}
    content = message.get("content")
    text = content if isinstance(content, str) else _text(content)
    calls = [
        {"tool": str(call.get("name") or ""), "raw_arguments": _arguments(call.get("arguments"))}
        for call in message.get("tool_calls") or [] if isinstance(call, Mapping)
    ]
    if text or not calls:
        turn["reply"] = text or ""
    if len(calls) == 1:
        turn.update(calls[0])
    elif calls:
        turn["calls"] = calls
    return turn


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content
                       if isinstance(part, Mapping) and isinstance(part.get("text"), str))
    return ""


def _arguments(arguments: Any) -> str:
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments if arguments is not None else {}, ensure_ascii=False)


def scrub_text(value: str, secrets: Iterable[str | None]) -> str:
    """`value` with the literal `secrets` (4 characters or more: a shorter one would eat
    ordinary text) and the `secrets` rule's matches replaced by `<secret>`."""
    for literal in sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True):
        value = value.replace(literal, SECRET)
    scrubbed: str = scrub(value, _SECRET_RULES)
    return scrubbed


def scrub_turns(turns: list[dict[str, Any]], secrets: Iterable[str | None]) -> list[dict[str, Any]]:
    """`turns` with every literal secret (the API key) and whatever the normaliser's
    `secrets` rule matches replaced by `<secret>`, in replies and tool arguments alike
    (arguments that are JSON are scrubbed as a tree, so a credential key's value goes
    too, and written back as JSON)."""
    literals = list(secrets)

    def text(value: str) -> str:
        return scrub_text(value, literals)

    def arguments(raw: str) -> str:
        raw = text(raw)
        try:
            tree = json.loads(raw)
        except ValueError:
            return raw
        cleaned = scrub(tree, _SECRET_RULES)
        return raw if cleaned == tree else json.dumps(cleaned, ensure_ascii=False)

    def turn(table: dict[str, Any]) -> dict[str, Any]:
        out = dict(table)
        if isinstance(out.get("reply"), str):
            out["reply"] = text(out["reply"])
        if isinstance(out.get("tool"), str):
            out["tool"] = text(out["tool"])
        if isinstance(out.get("raw_arguments"), str):
            out["raw_arguments"] = arguments(out["raw_arguments"])
        if isinstance(out.get("calls"), list):
            out["calls"] = [turn(call) for call in out["calls"]]
        return out

    return [turn(table) for table in turns]


def cassette_text(tasks: Sequence[RecordedTask], *, env_id: str, base_url: str,
                  model: str) -> str:
    """The cassette as a script file, written with tomlkit (a TOML writer: every string
    quoted right, whatever a model replied); it is parsed back before it is returned, so a
    file `vfcheck record` writes always loads."""
    import tomlkit

    host = cassette_host(base_url)
    document = tomlkit.document()
    for line in (
            f"vfcheck cassette of env {env_id}: replies of model {model} at {host},",
            "written by `vfcheck record` (secrets scrubbed). Replay it offline with",
            f"  vfcheck check {env_id} --script FILE   (or pytest --vf-env {env_id} "
            "--vf-script FILE)",
            "A request it holds no turn for fails, naming the task and the turn; set",
            'fallback = "default" to let the default policy answer those instead.'):
        document.add(tomlkit.comment(line))
    document.add("fallback", "error")
    listed = tomlkit.aot()
    for task in tasks:
        if not task.turns:
            continue
        entry = tomlkit.table()
        entry.add("key", _toml(task.key))
        entry["key"].comment(f"index {task.index}")
        turns = tomlkit.aot()
        for number, recorded in enumerate(task.turns):
            turn = tomlkit.table()
            turn.comment(f"turn {number}")
            for name, value in recorded.items():
                if name != "calls":
                    turn.add(name, _toml(value))
            if recorded.get("calls"):
                calls = tomlkit.aot()
                for call in recorded["calls"]:
                    table = tomlkit.table()
                    for name, value in call.items():
                        table.add(name, _toml(value))
                    calls.append(table)
                turn.add("calls", calls)
            turns.append(turn)
        entry.add("turn", turns)
        listed.append(entry)
    if listed:
        document.add(tomlkit.nl())
        document.add("task", listed)
    text = tomlkit.dumps(document)
    try:
        Script.from_toml(text, source="the cassette")
    except ScriptError as error:  # a bug of this module, not of the user's input
        raise RecordError(f"the recorded cassette does not load back: {error}") from None
    return text


def cassette_host(base_url: str) -> str:
    """The endpoint as the cassette and messages name it: `host:port`, no credentials."""
    return httpx.URL(base_url).netloc.decode("ascii", "replace").rpartition("@")[2]


def _toml(value: Any) -> Any:
    """A TOML value: a literal string ('...', no escapes: JSON arguments stay readable)
    when it can be one, else a basic string (tomlkit escapes it)."""
    import tomlkit

    if isinstance(value, bool | int):
        return value
    text = str(value)
    literal = "'" not in text and all(c == "\t" or (" " <= c and c != "\x7f") for c in text)
    return tomlkit.string(text, literal=literal)


def placeholder_notes(task: RecordedTask) -> list[str]:
    """A recorded reply holding `{last_user}` or `{last_tool_result}` would be filled in
    on replay: name it."""
    return [f"turn {number}'s reply contains {token}, which the replay fills in"
            for number, turn in enumerate(task.turns)
            for token in PLACEHOLDERS if token in str(turn.get("reply", ""))]


def misses(records: Iterable[RequestRecord]) -> list[str]:
    """The one-line messages of the requests a `fallback = "error"` script did not hold,
    in order, once each."""
    found = [record.reply.message for record in records
             if record.reply.message and record.reply.message.startswith(SCRIPT_MISS)]
    return list(dict.fromkeys(found))


def write_cassette(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@dataclass
class Recording:
    """What `record` played and wrote: the tasks' turns and notes, the cassette's text."""

    env_id: str
    tasks: list[RecordedTask]
    text: str
    tiers: list[RoleTier]


async def served_model(base_url: str, key: str | None) -> str | None:
    """The model to name when the user named none: vfcheck's own mock (`vfcheck
    mock-server`, whose `GET /models` lists models it owns) is `vfcheck-scripted`, so a
    cassette recorded from it does not claim another model replied. None otherwise (the
    runner's default is sent, as before)."""
    from vfcheck._model import DEFAULT_MODEL_ID

    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        async with httpx.AsyncClient(timeout=5.0) as client:
            listed = (await client.get(base_url.rstrip("/") + "/models",
                                       headers=headers)).json()
    except (httpx.HTTPError, ValueError):
        return None
    data = listed.get("data") if isinstance(listed, dict) else None
    owners = {m.get("owned_by") for m in data or [] if isinstance(m, dict)}
    return DEFAULT_MODEL_ID if owners == {"vfcheck"} else None


async def record(
    env_id: str,
    *,
    base_url: str,
    api_key_var: str = DEFAULT_API_KEY_VAR,
    model_name: str | None = None,
    num_tasks: int,
    harness: HarnessTier = "fast",
    env_args: Mapping[str, Any] | None = None,
    paths: Sequence[str] = (),
    wheels: str | None = None,
    timeout: float | None = 300.0,
    concurrency: int = 4,
    on_start: Callable[[int], None] | None = None,
    on_result: Callable[[EpisodeResult], None] | None = None,
) -> Recording:
    """Play one episode of each of the first `num_tasks` tasks against `base_url` with the
    ordinary runner and turn their traces into a cassette (scrubbed). Raises `RecordError`
    before playing (no key for a remote endpoint) and when no reply was recorded, and
    `EnvLoadError` when the env does not load."""
    from vfcheck._episodes.runner import REAL_MODEL_DEFAULT, run_episodes

    key = api_key_for(api_key_var, base_url)
    if model_name is None:
        model_name = await served_model(base_url, key)
    summary = await run_episodes(
        env_id, num_tasks=num_tasks, rollouts=1, concurrency=concurrency, harness=harness,
        env_args=env_args, base_url=base_url, api_key_var=api_key_var, model_name=model_name,
        timeout=timeout, paths=paths, wheels=wheels, on_start=on_start, on_result=on_result,
    )
    tasks: list[RecordedTask] = []
    for result in summary.results:
        task = recorded_task(result.task.index, result.task.key,
                             [trace.to_record() for trace in result.traces], result.errors())
        task.turns = scrub_turns(task.turns, [key])
        task.notes = [scrub_text(note, [key]) for note in task.notes + placeholder_notes(task)]
        tasks.append(task)
    if not any("fault" not in turn for task in tasks for turn in task.turns):
        errors = [error for result in summary.results for error in result.errors()]
        why = scrub_text(errors[0], [key]) if errors else next(
            (note for task in tasks for note in task.notes), "no episode was played")
        raise RecordError(f"env {env_id!r}: no model reply was recorded from "
                          f"{cassette_host(base_url)} ({why})")
    text = cassette_text(tasks, env_id=env_id, base_url=base_url,
                         model=scrub_text(model_name or REAL_MODEL_DEFAULT, [key]))
    return Recording(env_id, tasks, text, summary.tiers)
