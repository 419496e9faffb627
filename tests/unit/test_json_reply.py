"""The JSON line the default reply ends with where the prompt shows one to end with."""

from __future__ import annotations

import json

from vfcheck._model import default_reply
from vfcheck._model.json_reply import json_reply
from vfcheck._model.types import ModelRequest

PROPOSE = ("Your FINAL reply must end with exactly one JSON object on its own line: "
           '{"problem": "<problem text>", "answer": <integer>}')


def test_a_template_is_filled_by_what_its_placeholders_name() -> None:
    assert json.loads(json_reply(PROPOSE) or "") == {"problem": "problem text", "answer": 0}
    assert json_reply('Reply as {"reasoning": "...", "answer": 42}.') == \
        '{"reasoning": "...", "answer": 42}'
    assert json_reply("Repeat this phrase: hello world") is None


def test_the_default_reply_echoes_and_ends_with_the_object() -> None:
    request = ModelRequest(body={"messages": [{"role": "user", "content": PROPOSE}]})
    text = default_reply()(request).content
    assert text.startswith(PROPOSE)
    assert json.loads(text.splitlines()[-1]) == {"problem": "problem text", "answer": 0}
    plain = ModelRequest(body={"messages": [{"role": "user", "content": "say hello"}]})
    assert default_reply()(plain).content == "say hello"
