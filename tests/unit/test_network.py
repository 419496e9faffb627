"""Env code's own HTTP requests, in-process: refused in the user's terms and logged, or
answered by a script's `[[http]]` entries; a bad entry is one line."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from vfcheck._model import EpisodeRef, ScriptedModel, TaskRef, episode_scope
from vfcheck._model.offline_http import OfflineRequestError, http_answer
from vfcheck._model.script import Script, ScriptError

RUBRIC = "https://rubrics.example.org/v1/echo.json"


def get(model: ScriptedModel, url: str, method: str = "GET") -> httpx.Response:
    async def ask() -> httpx.Response:
        with model.mock():
            async with httpx.AsyncClient() as client:
                return await client.request(method, url)

    return asyncio.run(ask())


def test_a_request_nobody_serves_is_refused_in_the_users_terms_and_logged() -> None:
    model = ScriptedModel()
    ref = EpisodeRef(TaskRef(1, "k"), stage=lambda: "the scoring stage of an episode")

    async def ask() -> None:
        with model.mock(), episode_scope(ref):
            async with httpx.AsyncClient() as client:
                await client.post("https://grader.example.org/v1/grade?x=1", json={})

    with pytest.raises(OfflineRequestError) as raised:
        asyncio.run(ask())
    message = str(raised.value)
    assert message.startswith("vfcheck runs offline: env code requested POST "
                              "https://grader.example.org/v1/grade?x=1 (the scoring stage")
    assert '[[http]] url = "https://grader.example.org/v1/grade" method = "POST"' in message
    assert isinstance(raised.value, httpx.ConnectError)  # what env code gets with no route
    [refused] = model.http.taken()
    assert (refused.method, refused.task, refused.stage) == (
        "POST", TaskRef(1, "k"), "the scoring stage of an episode")


def test_http_answers_match_method_url_and_prefix_and_model_calls_still_reach_the_model(
        ) -> None:
    model = ScriptedModel(http=[
        http_answer(RUBRIC, method="GET", json_body={"ignore_case": True}),
        http_answer("https://svc.example.org/v2/*", text="pong", status=202),
    ])
    assert get(model, RUBRIC).json() == {"ignore_case": True}
    assert get(model, RUBRIC + "?v=3").json() == {"ignore_case": True}  # query ignored
    served = get(model, "https://svc.example.org/v2/a/b", "POST")
    assert (served.status_code, served.text) == (202, "pong")
    with pytest.raises(OfflineRequestError):
        get(model, RUBRIC, "POST")  # the entry says GET
    models = get(model, "http://scripted-model.vfcheck.invalid/v1/models")
    assert models.status_code == 200 and model.http.taken()[0].method == "POST"


@pytest.mark.parametrize(("text", "says"), [
    ('[[http]]\nurl = "ftp://x/y"', "http 1: `url` must be an http:// or https:// URL"),
    ('[[http]]\nurl = "https://x"\njson = 1\ntext = "a"', "takes `json` or `text`, not both"),
    ('[[http]]\nurl = "https://x"\nbody = 1', "unknown field `body` (allowed: url, method, "
     "status, json, text)"),
    ('[[http]]\nurl = "https://x"\nstatus = 99', "http 1, `status`: Input should be greater"),
    ('[[http]]\nmethod = "GET"', "http 1, `url`: Field required"),
])
def test_a_bad_http_entry_is_one_line_naming_it(text: str, says: str) -> None:
    with pytest.raises(ScriptError, match="http 1") as raised:
        Script.from_toml(text, source="s.toml")
    assert says in str(raised.value) and "\n" not in str(raised.value), str(raised.value)
