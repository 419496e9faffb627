"""Golden traces: the workflow as an env author runs it through the plugin (`pytester`) and the
CLI: record, pass, edit the env, read the diff; strictness, unused files, corrupt files,
non-determinism, `-n 2`, byte-identical files from both front ends, and the committed golden
traces of the fixture envs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support import ROOT

pytest_plugins = ["pytester"]


FIXTURES = ROOT / "fixtures"
GOLDEN = ROOT / "golden"
RECORDED = ["vfc-echo", "vfc-tool", "vfc-multiturn", "vfc-duet", "vfc-many"]
"""The well-behaved fixture envs whose golden traces are committed under `golden/`."""


# -- the book, without verifiers


def test_task_identity_prefers_an_overridden_key_then_data_id_then_index() -> None:
    import verifiers.v1 as vf

    from vfcheck._traces.golden import task_identity

    class Keyed(vf.Task):  # type: ignore[misc]
        @property
        def key(self) -> str:
            return "mine"

    assert task_identity(Keyed(vf.TaskData(prompt="p", id="d"))) == ("mine", "key")
    assert task_identity(vf.Task(vf.TaskData(prompt="p", id="d"))) == ("d", "data.id")
    indexed = vf.Task(vf.TaskData(prompt="p").model_copy(update={"idx": 4}))
    assert task_identity(indexed) == ("4", "index")


# -- the workflow, through the plugin and the CLI


def copy_fixtures(dest: Path, *modules: str) -> Path:
    envs = dest / "envs"
    envs.mkdir()
    for module in ("vfc_echo", *modules):
        shutil.copy(FIXTURES / f"{module}.py", envs / f"{module}.py")
    return envs


def golden_run(pytester: pytest.Pytester, env: str, envs: Path, *extra: str) -> Any:
    return pytester.runpytest_subprocess(
        "--vf-env", env, f"--vf-path={envs}", "--vf-checks", "golden", "-p", "no:cacheprovider",
        "-rs", *extra, timeout=600)


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes()
            for p in sorted(folder.rglob("*.json"))}


@pytest.mark.slow
def test_record_then_pass_byte_identical_across_n_and_front_ends(
    pytester: pytest.Pytester,
) -> None:
    envs = copy_fixtures(pytester.path)
    first = golden_run(pytester, "vfc-echo", envs, "--snapshot-update")
    first.assert_outcomes(passed=5)  # load, golden.unused, golden[0..2]
    first.stdout.fnmatch_lines(["*vfc-echo golden traces: 3 recorded*"])
    recorded = files(pytester.path / "golden")
    assert sorted(recorded) == ["vfc-echo/vfc-echo_hello_world.json",
                                "vfc-echo/vfc-echo_ping.json", "vfc-echo/vfc-echo_verifiers.json"]
    again = golden_run(pytester, "vfc-echo", envs, "-n", "2")
    again.assert_outcomes(passed=5)
    again.stdout.fnmatch_lines(["*vfc-echo golden traces: 3 matched*"])
    golden_run(pytester, "vfc-echo", envs, "-n", "2", "--snapshot-update",
               "--vf-golden-dir", "golden-n2").assert_outcomes(passed=5)
    cli = subprocess.run(
        [sys.executable, "-m", "vfcheck", "check", "vfc-echo", "--path", str(envs), "--checks",
         "golden", "--golden-dir", "golden-cli", "--golden-update"],
        cwd=pytester.path, capture_output=True, text=True, timeout=600,
        stdin=subprocess.DEVNULL)
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert files(pytester.path / "golden-n2") == recorded
    assert files(pytester.path / "golden-cli") == recorded
    # the committed golden traces of vfc-echo are these very bytes
    assert files(GOLDEN / "vfc-echo") == {
        name.removeprefix("vfc-echo/"): data for name, data in recorded.items()}


EDITS = {
    "prompt": ("vfc_echo", 'SYSTEM = "Repeat the user', 'SYSTEM = "Echo the user',
               "vfc-echo", ["traces[0].messages[0].content:",
                            "traces[0].task.data.system_prompt:"]),
    "reward": ("vfc_echo", "return float(lenient_match(self.data.answer, reply or \"\"))",
               "return 0.5 * float(lenient_match(self.data.answer, reply or \"\"))",
               "vfc-echo", ["traces[0].rewards.echoed.score: 1.0 -> 0.5"]),
    "tool": ("vfc_tool", 'STAMP = "calc-9d2"', 'STAMP = "calc-v2"',
             "vfc-tool", ['traces[0].messages[3].content: "109 [calc-9d2]" -> "109 [calc-v2]"']),
}


@pytest.mark.slow
@pytest.mark.parametrize("edit", sorted(EDITS))
def test_editing_the_env_fails_golden_items_with_a_diff_naming_what_changed(
    pytester: pytest.Pytester, edit: str,
) -> None:
    module, old, new, env, expected = EDITS[edit]
    envs = copy_fixtures(pytester.path, "vfc_tool")
    golden_run(pytester, env, envs, "--snapshot-update").assert_outcomes(passed=2 + (
        3 if env == "vfc-echo" else 2))
    before = files(pytester.path / "golden")
    source = envs / f"{module}.py"
    assert old in source.read_text()
    source.write_text(source.read_text().replace(old, new))
    edited = golden_run(pytester, env, envs)
    assert edited.ret == 1
    out = edited.stdout.str()
    assert "golden failed — the normalised trace differs from the golden trace golden/" in out
    for line in expected:
        assert line in out, out
    assert files(pytester.path / "golden") == before  # same names, nothing rewritten


@pytest.mark.slow
def test_strict_unused_and_other_envs_files(pytester: pytest.Pytester) -> None:
    envs = copy_fixtures(pytester.path)
    golden_run(pytester, "vfc-echo", envs, "--snapshot-update").assert_outcomes(passed=5)
    golden = pytester.path / "golden"
    (golden / "vfc-echo" / "vfc-echo_retired.json").write_text("{}")
    (golden / "vfc-other").mkdir()
    (golden / "vfc-other" / "x.json").write_text("{}")
    # sample 1: the files of tasks 1 and 2 are not unused; the retired one is, reported
    sampled = golden_run(pytester, "vfc-echo", envs, "--vf-sample", "1")
    sampled.assert_outcomes(passed=2, skipped=1)
    sampled.stdout.fnmatch_lines([
        "*1 unused golden file(s), naming no task of the env: "
        "golden/vfc-echo/vfc-echo_retired.json*"])
    strict = golden_run(pytester, "vfc-echo", envs, "--vf-sample", "1", "--vf-golden-strict")
    strict.assert_outcomes(passed=2, failed=1)
    strict.stdout.fnmatch_lines(["*_ vfc-echo::golden.unused _*", "*golden.unused failed —*"])
    # -n limits the tasks loaded: unknowable, never removed
    limited = golden_run(pytester, "vfc-echo", envs, "--vf-num-tasks", "2", "--snapshot-update")
    limited.stdout.fnmatch_lines(["*cannot tell which golden files*-n 2 limits*"])
    assert (golden / "vfc-echo" / "vfc-echo_retired.json").exists()
    cleaned = golden_run(pytester, "vfc-echo", envs, "--vf-sample", "1", "--snapshot-update")
    cleaned.assert_outcomes(passed=3)
    assert not (golden / "vfc-echo" / "vfc-echo_retired.json").exists()
    assert (golden / "vfc-echo" / "vfc-echo_verifiers.json").exists()  # not sampled, kept
    assert (golden / "vfc-other" / "x.json").exists()  # another env's, untouched
    # a task with no golden trace under strict
    (golden / "vfc-echo" / "vfc-echo_ping.json").unlink()
    missing = golden_run(pytester, "vfc-echo", envs, "--vf-golden-strict")
    missing.assert_outcomes(passed=4, failed=1)
    missing.stdout.fnmatch_lines(["*no golden trace at golden/vfc-echo/vfc-echo_ping.json "
                                  "(--vf-golden-strict); record it with: pytest --vf-env "
                                  "vfc-echo*--snapshot-update*"])


@pytest.mark.slow
def test_a_corrupt_golden_file_fails_its_item_only(pytester: pytest.Pytester) -> None:
    envs = copy_fixtures(pytester.path)
    golden_run(pytester, "vfc-echo", envs, "--snapshot-update").assert_outcomes(passed=5)
    path = pytester.path / "golden" / "vfc-echo" / "vfc-echo_ping.json"
    path.write_text(path.read_text()[:200])  # truncated
    run = golden_run(pytester, "vfc-echo", envs)
    run.assert_outcomes(passed=4, failed=1)
    run.stdout.fnmatch_lines(["*golden/vfc-echo/vfc-echo_ping.json is not valid JSON*"])


@pytest.mark.slow
def test_a_non_deterministic_task_is_reported_as_such_and_not_recorded(
    pytester: pytest.Pytester,
) -> None:
    envs = copy_fixtures(pytester.path, "vfc_broken_determinism")
    run = golden_run(pytester, "vfc-broken-determinism", envs, "--snapshot-update")
    run.assert_outcomes(passed=4, failed=1)
    run.stdout.fnmatch_lines([
        "*task 1 (vfc-echo:ping): golden failed — the env is not deterministic*"
        "metrics.review_priority*no golden comparison was made*"])
    names = sorted(files(pytester.path / "golden"))
    assert names == ["vfc-broken-determinism/vfc-echo_hello_world.json",
                     "vfc-broken-determinism/vfc-echo_verifiers.json"]


@pytest.mark.slow
def test_the_committed_golden_traces_are_current(tmp_path: Path) -> None:
    """The fixture envs' golden traces under `golden/` match what this Python and this
    verifiers record (nox runs this on 3.11, 3.12 and 3.13)."""
    before = files(GOLDEN)
    done = subprocess.run(
        [sys.executable, "-m", "vfcheck", "check", *RECORDED, "--path", str(FIXTURES),
         "--checks", "golden", "--golden-dir", str(GOLDEN), "--golden-strict",
         "--json", str(tmp_path / "report.json")],
        cwd=tmp_path, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    report = json.loads((tmp_path / "report.json").read_text())
    for env in report["envs"]:
        actions = [f["details"]["golden"]["action"] for f in env["findings"]
                   if f["check"] == "golden"]
        assert actions and set(actions) == {"matched"}, (env["id"], actions)
    assert files(GOLDEN) == before
