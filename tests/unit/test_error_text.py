"""Error text a finding quotes: a traceback condensed to its head and exception line."""

from __future__ import annotations

from vfcheck._episodes.error_text import condense, one_line

HARNESS_DIED = """harness 'vfcheck-chat' exited 1:        ^^^^^^^^^^^^^^^^^^^^^
    |   File "/venv/lib/python3.11/site-packages/httpx2/_client.py", line 1672, in stream
    |     response = await self.send(
    |                ^^^^^^^^^^^^^^^^
    |   File "/venv/lib/python3.11/site-packages/httpx2/_transports/default.py", line 112
    |     raise mapped_exc(message) from exc
    | httpx2.ConnectError: [Errno 111] vfcheck runs offline: to b'mcp.deepwiki.com'
    +------------------------------------"""


def test_a_harness_traceback_keeps_its_head_and_its_exception_line() -> None:
    assert condense(HARNESS_DIED) == (
        "harness 'vfcheck-chat' exited 1: ... httpx2.ConnectError: [Errno 111] vfcheck runs "
        "offline: to b'mcp.deepwiki.com'")


def test_a_plain_traceback_is_its_exception_line_and_other_text_stays() -> None:
    assert condense('Traceback (most recent call last):\n  File "x.py", line 1, in <module>\n'
                    "    f()\nValueError: boom") == "ValueError: boom"
    assert condense("TaskError: task setup: RuntimeError: no db") == \
        "TaskError: task setup: RuntimeError: no db"
    assert condense("line one\nline two\nline three") == "line one\nline two\nline three"


def test_one_line_keeps_the_first_and_the_deepest_cause() -> None:
    error = RuntimeError("failed to prepare uv script: error: Request failed\n"
                         "  cause: client error (Connect)\n  cause: dns error")
    assert one_line(error) == ("RuntimeError: failed to prepare uv script: error: Request "
                               "failed ... cause: dns error")
