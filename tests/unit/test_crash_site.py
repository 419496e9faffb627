"""Where env code raised: read from a recorded traceback (a trace's error) and caught by the
tracer of a second play (a vf-validate row). The functions below stand in for env code (this
file is neither vfcheck's, verifiers', the standard library's nor site-packages')."""

from __future__ import annotations

import asyncio
import sys
import traceback

from vfcheck._host.crash_site import located, raise_site, site_in_traceback

CREDIT = {"hello world": 1.0}


async def crashing_reward(answer: str) -> float:
    return CREDIT[answer] * 1.0  # the crash


async def boundary(answer: str) -> float:
    """Like verifiers' `boundary`: the cause's words inside a wrapper's."""
    try:
        return await crashing_reward(answer)
    except Exception as e:
        raise RuntimeError(f"task T scoring: {type(e).__name__}: {e}") from e


def crash_line() -> int:
    lines = open(__file__).read().splitlines()
    return next(n for n, text in enumerate(lines, 1) if text.endswith("# the crash"))


def test_a_recorded_traceback_names_the_root_causes_innermost_env_line() -> None:
    try:
        asyncio.run(boundary("ping"))
    except RuntimeError as e:
        text = "".join(traceback.format_exception(e))
    site = site_in_traceback(text)
    assert site is not None
    assert (site.function, site.at, site.code) == (
        "crashing_reward", f"unit/test_crash_site.py:{crash_line()}",
        "return CREDIT[answer] * 1.0  # the crash")
    assert site.describe() == (f"in env code (crashing_reward) at unit/test_crash_site.py:"
                               f"{crash_line()}: `return CREDIT[answer] * 1.0  # the crash`")
    assert located("TaskError", "boom", text).startswith("TaskError: boom (in env code (")
    assert located("TaskError", "boom", None) == "TaskError: boom"
    assert site_in_traceback("Traceback (most recent call last):\nValueError: x\n") is None


def test_a_second_play_under_the_tracer_finds_where_it_raised() -> None:
    before = sys.gettrace()
    site = asyncio.run(raise_site(lambda: boundary("ping"),
                                  "TaskError: task T scoring: KeyError: 'ping'", timeout=10))
    assert site is not None and site.at == f"unit/test_crash_site.py:{crash_line()}"
    assert sys.gettrace() is before  # the tracer is gone again
    # no exception of the play matches the error: nothing is claimed
    assert asyncio.run(raise_site(lambda: boundary("ping"), "ValueError: other", 10)) is None
    assert asyncio.run(raise_site(lambda: boundary("hello world"), "KeyError: 'x'", 10)) is None
