"""Error text a finding quotes: a traceback condensed to its head and exception line."""

from __future__ import annotations

import asyncio
import traceback
from pathlib import Path

from vfcheck._host.crash_site import located
from vfcheck._shared.error_text import condense, group_leaves, one_line

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


def connect_refused() -> None:
    try:
        raise OSError("[Errno 111] Connection refused")
    except OSError as e:
        raise ConnectionError("vfcheck runs offline: env code connected to "
                              "b'mcp.example.org':443") from e


def group_traceback() -> str:
    """A real exception group's printout: an asyncio `TaskGroup` (as anyio's, under an MCP
    client) whose one task raised a chained error and whose nested group holds a KeyError."""
    async def nested() -> None:
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(missing_key())

    async def missing_key() -> None:
        raise KeyError("ping")

    async def connect() -> None:
        connect_refused()

    async def main() -> None:
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(connect())
            tasks.create_task(nested())

    try:
        asyncio.run(main())
    except BaseException:  # noqa: BLE001 - the printout is what is tested
        return traceback.format_exc()
    raise AssertionError("no exception group")


def test_an_exception_group_is_condensed_to_its_leaf_exceptions_on_one_line() -> None:
    text = group_traceback()
    assert "ExceptionGroup: unhandled errors in a TaskGroup (2 sub-exceptions)" in text
    # verifiers keeps the tail of a harness's stderr: it starts mid-line
    message = f"harness 'vfcheck-chat' exited 1: t anext(self.gen)\n{text[len(text) // 3:]}"
    assert condense(message) == (
        "harness 'vfcheck-chat' exited 1: ... ConnectionError: vfcheck runs offline: env code "
        "connected to b'mcp.example.org':443; KeyError: 'ping'")
    assert [leaf.exception for leaf in group_leaves(text)] == [
        "ConnectionError: vfcheck runs offline: env code connected to b'mcp.example.org':443",
        "KeyError: 'ping'"]
    assert group_leaves(HARNESS_DIED) == [] or all(
        "\n" not in leaf.exception for leaf in group_leaves(HARNESS_DIED))


def test_a_leaf_names_where_env_code_raised_it() -> None:
    """`located` (a recorded error) condenses its message and a group in its traceback,
    naming the env's line of each leaf (here, this module is the env code)."""
    text = group_traceback()
    line = located("TaskError", "task T scoring: ExceptionGroup: unhandled errors in a "
                   "TaskGroup (2 sub-exceptions)", text)
    assert line.startswith(
        "TaskError: task T scoring: ExceptionGroup: unhandled errors in a TaskGroup "
        "(2 sub-exceptions): ConnectionError: vfcheck runs offline: env code connected to "
        "b'mcp.example.org':443 (in env code (connect_refused) at "), line
    # the root cause's line, as for any chained error (`site_in_traceback`)
    raised = next(n for n, code in enumerate(Path(__file__).read_text().splitlines(), 1)
                  if code.strip().startswith('raise OSError("[Errno 111]'))
    assert f"test_error_text.py:{raised}: `raise OSError(" in line
    raised = next(n for n, code in enumerate(Path(__file__).read_text().splitlines(), 1)
                  if code.strip() == 'raise KeyError("ping")')
    assert "; KeyError: 'ping' (in env code (missing_key) at " in line
    assert line.endswith(f"test_error_text.py:{raised}: `raise KeyError(\"ping\")`)"), line
    assert "\n" not in line
    assert located("HarnessError", f"harness 'x' exited 1: \n{text}", None).startswith(
        "HarnessError: harness 'x' exited 1: ... ConnectionError: ")


def test_a_plain_exception_raised_from_a_group_keeps_both() -> None:
    try:
        try:
            raise ExceptionGroup("unhandled errors in a TaskGroup", [KeyError("ping")])
        except ExceptionGroup as group:
            raise RuntimeError("the MCP client closed") from group
    except RuntimeError:
        text = traceback.format_exc()
    assert condense(text) == "RuntimeError: the MCP client closed, from KeyError: 'ping'"
