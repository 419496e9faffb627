"""The JSON object a prompt asks the reply to end with, filled in: what the default reply
appends so that an env that parses its model's final JSON line gets one.

verifiers' proposer-solver asks its proposer to end with `{"problem": "<problem text>",
"answer": <integer>}` and raises on anything else; an echo of the prompt (the default
reply) carries the template, which is not JSON. The template's keys are kept, each
placeholder filled by what it names (`<integer>` -> 0, `"<text>"` -> a string).
"""

from __future__ import annotations

import json
import re

_TEMPLATE = re.compile(r"\{[^{}]*[\"'][A-Za-z_]\w*[\"']\s*:[^{}]*\}")
_FIELD = re.compile(r"[\"'](?P<key>[A-Za-z_]\w*)[\"']\s*:\s*(?P<value>\"[^\"]*\"|'[^']*'|[^,}]*)")
_NUMBER_WORDS = ("int", "integer", "number", "float", "num", "digit")


def json_reply(text: str) -> str | None:
    """One JSON object line for the last JSON template in `text`, or None (no template)."""
    templates = _TEMPLATE.findall(text)
    if not templates:
        return None
    template = templates[-1]
    try:
        parsed = json.loads(template)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        return json.dumps(parsed)
    filled = {m.group("key"): _value(m.group("value").strip()) for m in _FIELD.finditer(template)}
    return json.dumps(filled) if filled else None


def _value(placeholder: str) -> object:
    if placeholder[:1] in "\"'":
        return placeholder[1:-1].strip("<>") or "text"
    word = placeholder.strip("<>").strip().lower()
    if word in ("true", "false"):
        return word == "true"
    try:
        return int(word)
    except ValueError:
        pass
    if any(w in word for w in _NUMBER_WORDS):
        return 0.0 if "float" in word else 0
    return word or "text"
