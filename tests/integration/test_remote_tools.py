"""A harness that never reaches the model (vfc-remote-tools, deepwiki's shape: the task's
toolset is a remote MCP server, which an offline run refuses): `episode` fails on each task,
truly, in one line naming the refused connection (the harness's exception group condensed
to its leaf); `preview`, which has no request to judge, is skipped as blocked, pointing to
`episode[i]`, with no deadline hit and nothing run again alone, and so is `robustness`
(no bad reply was ever sent: it used to pass, "survived"), and so are `fuzz` and
`concurrency` (no searched reply, no episode at once reached env code: they passed too);
`served.episode` does not
call the same error one "the in-process play did not" record."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import CheckCache

pytestmark = pytest.mark.slow

ENV = "vfc-remote-tools"
REFUSED = "vfcheck runs offline: env code connected to b'mcp.vfc-wiki.example.org':443"


def test_a_harness_that_never_reaches_the_model_blocks_preview_and_fails_episode(
    fixtures_dir: Path, checked: CheckCache
) -> None:
    run = checked.check(ENV, "--path", str(fixtures_dir), "--checks",
                        "episode,preview,robustness,fuzz,concurrency,served")
    env = run.envs[ENV]
    by_unit = {(f["check"], (f["task"] or {}).get("index")): f for f in env["findings"]}
    for index in (0, 1):
        episode = by_unit[("episode", index)]
        assert episode["outcome"] == "failed", episode
        message = episode["message"]
        assert "it recorded HarnessError: harness 'vfcheck-chat' exited 1: ... " in message
        assert REFUSED in message and "\n" not in message and "|" not in message, message
        assert len(message) < 1000, message
        preview = by_unit[("preview", index)]
        assert preview["outcome"] == "skipped", preview
        assert preview["message"].split(": ", 1)[1].startswith(
            "blocked — the episode ended before the first model request (HarnessError: "
            "harness 'vfcheck-chat' exited 1: ... "), preview["message"]
        assert preview["message"].endswith(
            f"so no request was left to preview (see episode[{index}])"), preview["message"]
        assert "first_attempt" not in preview["details"]  # no deadline: not run again
        robustness = by_unit[("robustness", index)]  # no bad reply was ever sent
        assert robustness["outcome"] == "skipped", robustness
        assert "blocked — the episode ended before the first model request" in robustness[
            "message"] and robustness["message"].endswith(f"(see episode[{index}])")
        for check in ("fuzz", "concurrency"):  # no reply reached env code: no pass
            blocked = by_unit[(check, index)]
            assert blocked["outcome"] == "skipped", blocked
            assert "blocked — the episode ended before the first model request" in blocked[
                "message"] and blocked["message"].endswith(f"(see episode[{index}])")
        served = by_unit[("served.episode", index)]
        assert "which the in-process play did not" not in served["message"], served
    assert run.returncode == 1
