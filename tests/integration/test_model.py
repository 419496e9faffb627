"""The scripted model, driven through both transports with real clients."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import httpx
import pytest
from support import ROOT as REPO_ROOT
from unit.test_model import USER, WEATHER_TOOL

from vfcheck._model import (
    DEFAULT_MODEL_ID,
    Reply,
    ScriptedModel,
    TaskRef,
    sequence,
)

# ------------------------------------------------------------------- transports' edges


@pytest.mark.slow
def test_serve_forever_prints_url_and_stops_on_sigint() -> None:
    code = "from vfcheck._model import ScriptedModel, serve_forever; serve_forever(ScriptedModel())"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    with subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    ) as process:
        try:
            assert process.stdout is not None and process.stderr is not None
            url = process.stdout.readline().strip()
            assert url.startswith("http://127.0.0.1:") and url.endswith("/v1"), url
            models = httpx.get(f"{url}/models").json()
            assert models["data"][0]["id"] == DEFAULT_MODEL_ID
            process.send_signal(signal.SIGINT)
            assert process.wait(timeout=10) == 0, process.stderr.read()
        finally:
            if process.poll() is None:
                process.kill()


# -------------------------------------------------------------- verifiers' own parser


async def test_verifiers_upstream_client_and_stream_parser_read_the_mock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """verifiers' EvalClient relays the stream and its ChatStreamParser assembles it, as the
    interception server does (`_collect_stream` in verifiers/v1/interception/server.py)."""
    eval_client = pytest.importorskip("verifiers.v1.clients.eval")
    from verifiers.v1.configs.client import EvalClientConfig
    from verifiers.v1.dialects import ChatDialect

    monkeypatch.setenv("VFCHECK_TEST_API_KEY", "unused")
    model = ScriptedModel(sequence(Reply.tool("get_weather", {"city": "Oslo"}), "final"))
    model.bind("trace-42", TaskRef(3, "weather:3"))
    dialect = ChatDialect()
    responses = []
    with model.mock() as url:
        upstream = eval_client.EvalClient(
            EvalClientConfig(base_url=url, api_key_var="VFCHECK_TEST_API_KEY")
        )
        try:
            for _ in range(2):
                body = {"model": "m", "messages": USER, "tools": [WEATHER_TOOL], "stream": True}
                relayed = await upstream.relay(dialect, body, session_id="trace-42")
                parser = dialect.stream_parser()
                saw_terminal = False
                try:
                    async for event in relayed.chunks:
                        saw_terminal |= dialect.is_terminal_event(event)
                        parser.feed(event)
                finally:
                    await relayed.close()
                assert saw_terminal
                responses.append(parser.finish())
        finally:
            await upstream.close()
    tool_turn, final_turn = responses
    assert tool_turn.finish_reason == "tool_calls"
    calls = tool_turn.message.tool_calls
    assert calls is not None and calls[0].name == "get_weather"
    assert json.loads(calls[0].arguments) == {"city": "Oslo"}
    assert tool_turn.usage is not None
    assert (final_turn.message.content, final_turn.finish_reason) == ("final", "stop")
    assert [r.request.task for r in model.requests] == [TaskRef(3, "weather:3")] * 2
    assert [r.request.turn for r in model.requests] == [0, 1]


@pytest.mark.slow
def test_importing_the_model_does_not_import_verifiers() -> None:
    code = "import sys, vfcheck._model, vfcheck._model.script; print('verifiers' in sys.modules)"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert result.stdout.strip() == "False"
