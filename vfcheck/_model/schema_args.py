"""Tool arguments from a JSON schema: what the default policy sends when it calls a tool.

Deterministic for (seed, tool name), so a replayed episode sends the same bytes.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

from vfcheck._model.types import stable_digest

_WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india")
_STRING_FORMATS = {
    "date": "2024-01-02",
    "date-time": "2024-01-02T03:04:05Z",
    "time": "03:04:05",
    "email": "someone@example.com",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "uuid": "00000000-0000-4000-8000-000000000000",
}
_MAX_SCHEMA_DEPTH = 8

KEEP: Any = object()
"""What an `Override` returns to let the generator pick the value itself."""

Override: TypeAlias = Callable[[Mapping[str, Any], str], Any]
"""`(schema, property name) -> value or KEEP`, asked at every node (after `$ref`s are
followed); the name is the nearest enclosing object property's ("" at the top)."""


def takes_arguments(parameters: Mapping[str, Any]) -> bool:
    """Whether a tool's JSON-schema `parameters` declare any argument (a property, through
    `$ref`s and `anyOf`/`oneOf`/`allOf`). A tool that takes none cannot be called wrongly:
    calling it is the work itself (`bump` a counter, `roll` a die), never a guess."""
    def declares(schema: Mapping[str, Any], depth: int) -> bool:
        schema = _resolve_ref(schema, parameters)
        if schema.get("properties"):
            return True
        return depth < _MAX_SCHEMA_DEPTH and any(
            declares(part, depth + 1) for key in ("anyOf", "oneOf", "allOf")
            for part in schema.get(key) or () if isinstance(part, Mapping))
    return declares(parameters, 0)


def generate_arguments(
    parameters: Mapping[str, Any],
    *,
    seed: int = 0,
    tool_name: str = "",
    override: Override | None = None,
) -> dict[str, Any]:
    """Arguments that satisfy a tool's JSON schema, the same for the same (seed, tool_name).

    Covers strings (formats, lengths), integers and numbers (bounds), booleans, enums and
    consts, arrays (min/max items), nested objects, local `$ref`s (`$defs`) and
    `anyOf`/`oneOf`/`allOf`. An object gets its required properties, or all of them when
    the schema lists no `required`. `override` chooses values itself where it wants to
    (a judge's verdict fields, `vfcheck._model.judges`).
    """
    rng = random.Random(int(stable_digest(seed, tool_name), 16))
    value = _Generator(parameters, rng, override).example(parameters, 0, "")
    return value if isinstance(value, dict) else {}


class _Generator:
    """One walk over a schema: the root (for `$ref`s), the seeded rng, the override."""

    def __init__(
        self, root: Mapping[str, Any], rng: random.Random, override: Override | None
    ) -> None:
        self.root = root
        self.rng = rng
        self.override = override

    def chosen(self, schema: Mapping[str, Any], name: str) -> Any:
        if self.override is None or "const" in schema:
            return KEEP
        return self.override(schema, name)

    def example(self, schema: Mapping[str, Any], depth: int, name: str) -> Any:
        if depth > _MAX_SCHEMA_DEPTH:
            return None
        schema = _resolve_ref(schema, self.root)
        if (value := self.chosen(schema, name)) is not KEEP:
            return value
        rng = self.rng
        if "const" in schema:
            return schema["const"]
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return rng.choice(schema["enum"])
        for combinator in ("anyOf", "oneOf"):
            options = [o for o in schema.get(combinator) or [] if isinstance(o, dict)]
            if options:
                concrete = [o for o in options if o.get("type") != "null"] or options
                return self.example(concrete[0], depth + 1, name)
        if isinstance(schema.get("allOf"), list):
            schema = _merge_all_of(schema, self.root)
            if (value := self.chosen(schema, name)) is not KEEP:
                return value
        kind = schema_type(schema)
        if kind == "object":
            properties = schema.get("properties")
            properties = properties if isinstance(properties, dict) else {}
            required = schema.get("required")
            names = list(properties) if not isinstance(required, list) else list(required)
            return {
                key: self.example(properties.get(key) or {"type": "string"}, depth + 1, key)
                for key in names
            }
        if kind == "array":
            items = schema.get("items")
            items = items if isinstance(items, dict) else {"type": "string"}
            count = max(int(schema.get("minItems", 1)), 1)
            if isinstance(schema.get("maxItems"), int):
                count = min(count, schema["maxItems"])
            return [self.example(items, depth + 1, name) for _ in range(count)]
        if kind == "integer":
            low, high = number_bounds(schema, 0, 100, step=1)
            return rng.randint(math.ceil(low), max(math.ceil(low), math.floor(high)))
        if kind == "number":
            low, high = number_bounds(schema, 0.0, 100.0, step=0.01)
            return min(max(round(rng.uniform(low, high), 2), low), high)
        if kind == "boolean":
            return rng.random() < 0.5
        if kind == "null":
            return None
        return _example_string(schema, rng)


def _resolve_ref(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    """Follow local `#/...` refs (pydantic puts models under `$defs`); unknown refs -> {}."""
    seen = 0
    while isinstance(schema.get("$ref"), str) and seen < _MAX_SCHEMA_DEPTH:
        target: Any = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target.get(part) if isinstance(target, dict) else None
        schema = target if isinstance(target, dict) else {}
        seen += 1
    return schema


def _merge_all_of(schema: Mapping[str, Any], root: Mapping[str, Any]) -> dict[str, Any]:
    merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
    for part in schema["allOf"]:
        if not isinstance(part, dict):
            continue
        part = _resolve_ref(part, root)
        for key, value in part.items():
            if key == "properties" and isinstance(value, dict):
                merged["properties"] = {**merged.get("properties", {}), **value}
            elif key == "required" and isinstance(value, list):
                merged["required"] = [*merged.get("required", []), *value]
            else:
                merged.setdefault(key, value)
    return merged


def schema_type(schema: Mapping[str, Any]) -> str:
    """The JSON type a (resolved) schema describes; "string" when it says nothing."""
    kind = schema.get("type")
    if isinstance(kind, list):
        concrete = [k for k in kind if k != "null"]
        kind = concrete[0] if concrete else "null"
    if isinstance(kind, str):
        return kind
    if "properties" in schema:
        return "object"
    if "items" in schema:
        return "array"
    return "string"


def number_bounds(
    schema: Mapping[str, Any], low: float, high: float, *, step: float
) -> tuple[float, float]:
    """[low, high] from minimum/maximum (exclusive ones shrink by `step`); an open upper end
    stays `high - low` above the lower bound."""
    span = high - low
    if isinstance(schema.get("minimum"), int | float):
        low = schema["minimum"]
    if isinstance(schema.get("exclusiveMinimum"), int | float):
        low = schema["exclusiveMinimum"] + step
    high = low + span
    if isinstance(schema.get("maximum"), int | float):
        high = schema["maximum"]
    if isinstance(schema.get("exclusiveMaximum"), int | float):
        high = min(high, schema["exclusiveMaximum"] - step)
    return low, max(low, high)


def _example_string(schema: Mapping[str, Any], rng: random.Random) -> str:
    text = _STRING_FORMATS.get(
        str(schema.get("format")), f"{rng.choice(_WORDS)} {rng.choice(_WORDS)}"
    )
    min_length = schema.get("minLength")
    if isinstance(min_length, int) and len(text) < min_length:
        text = text + "x" * (min_length - len(text))
    max_length = schema.get("maxLength")
    if isinstance(max_length, int):
        text = text[:max_length]
    return text
