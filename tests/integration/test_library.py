"""The library suite on the installed verifiers (0.4.0): what it finds without and with the
shipped baseline, a reproduction of every baseline entry, the baseline's strictness, and
feature detection on a verifiers that lacks a hook.

The full suite (`vfcheck library --no-baseline`: CLIs + probe episodes, ~30 s) runs once per
test session, shared by every
xdist worker through a lock file; the tests that need it are `slow`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from support import CheckCache, check_report, vfcheck
from unit.test_library import ENTRIES, SHIPPED, VERSION, _entry

from vfcheck._library import (
    LIBRARY_FAMILIES,
    PROBE_ENV,
    apply_baseline,
)
from vfcheck._library.baseline import Baseline, Entry
from vfcheck._library.source import verifiers_root
from vfcheck._library.suite import BUNDLED_ENVS
from vfcheck._shared.findings import Finding

needs_baseline = pytest.mark.skipif(SHIPPED is None,
                                    reason=f"no shipped baseline for verifiers {VERSION}")


@pytest.fixture(scope="session")
def raw_run(checked: CheckCache) -> tuple[str, list[Finding]]:
    """`vfcheck library --no-baseline --json`, once per session (xdist workers share it):
    the findings as the CLI reports them, before any baseline."""
    def run(folder: Path) -> list[Any]:
        done = vfcheck("library", "--no-baseline", "--json", str(folder / "raw.json"),
                       cwd=folder)
        return [done.returncode, done.stdout[-3000:] + done.stderr[-3000:]]

    folder, (code, said) = checked.once(["library", "--no-baseline"], run)
    assert code == 1, said  # the baselined behaviours fail without their baseline
    (env,) = json.loads((folder / "raw.json").read_text())["envs"]
    return env["id"], [Finding.from_dict(f) for f in env["findings"]]


@pytest.fixture
def raw(raw_run: tuple[str, list[Finding]]) -> list[Finding]:
    return [replace(f, details=dict(f.details)) for f in raw_run[1]]


def by_check(findings: list[Finding]) -> dict[str, Finding]:
    return {f.check: f for f in findings}


# -- the suite on the installed verifiers


@pytest.mark.slow
def test_importing_the_library_suite_does_not_import_verifiers() -> None:
    code = "import sys, vfcheck._library; print('verifiers' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "False"


@pytest.mark.slow
def test_findings_are_env_level_library_findings_with_unique_ids(
    raw_run: tuple[str, list[Finding]],
) -> None:
    env, findings = raw_run
    assert env == f"verifiers@{VERSION}"
    assert {f.family for f in findings} == set(LIBRARY_FAMILIES)
    assert all(f.task is None for f in findings)
    checks = [f.check for f in findings]
    assert len(checks) == len(set(checks))
    assert not [f for f in findings if f.outcome == "error"], [
        f.message for f in findings if f.outcome == "error"]


@pytest.mark.slow
def test_every_usage_string_names_vf_commands_that_are_its_console_scripts(
    raw: list[Finding],
) -> None:
    usage = [f for f in raw if f.check.startswith(("usage.names.", "usage.scripts."))]
    assert {f.check for f in usage} >= {
        f"usage.{kind}.vf-{cli}" for kind in ("names", "scripts")
        for cli in ("eval", "validate", "init", "debug", "replay", "gepa")
    }
    assert all(f.outcome == "passed" for f in usage), [f.message for f in usage]


@pytest.mark.slow
def test_true_path_claims_pass(raw: list[Finding]) -> None:
    found = by_check(raw)
    for check in ("usage.paths.vf-eval.USAGE:configs/resolved/eval.json",
                  "usage.paths.vf-validate.--output-dir:results.jsonl",
                  "usage.paths.vf-init.USAGE:--path",
                  "usage.paths.vf-init.USAGE:./environments"):
        assert found[check].outcome == "passed", found[check].message


@pytest.mark.slow
def test_api_hooks_and_the_eval_contract_hold(raw: list[Finding]) -> None:
    api = [f for f in raw if f.family == "api"]
    assert {"api.Env.run_slot", "api.Trace.watch", "api.PendingTurn.abandon",
            "api.validate._run_check", "api.WireTrace", "api.eval.serve_flag",
            "api.eval.hint_logged", "api.eval.hint_dashboard", "api.serve.EnvServer",
            "api.serve.pool",
            "api.serve.EnvClient.run", "api.serve.EnvClient._request",
            "api.runtime.subprocess_starts"} <= {f.check for f in api}
    baselined = {e.check for e in ENTRIES}  # known behaviours: held by the baseline tests
    unbaselined = [f for f in api if f.check not in baselined]
    assert all(f.outcome == "passed" for f in unbaselined), [
        f.message for f in unbaselined if f.bad]
    assert "--serve" in by_check(raw)["api.eval.serve_flag"].message


@needs_baseline
@pytest.mark.slow
def test_without_baseline_each_known_behaviour_is_a_failed_finding(raw: list[Finding]) -> None:
    found = by_check(raw)
    for entry in ENTRIES:
        assert found[entry.check].outcome == "failed", found[entry.check].message
        assert found[entry.check].details["observed"] == entry.observed
    baselined = {e.check for e in ENTRIES}
    assert [f.check for f in raw if f.bad and f.check not in baselined] == []


@needs_baseline
@pytest.mark.slow
def test_with_the_shipped_baseline_nothing_fails(raw: list[Finding]) -> None:
    assert SHIPPED is not None
    judged = apply_baseline(raw, SHIPPED)
    assert [f.message for f in judged if f.bad] == []
    assert sorted(f.check for f in judged if f.outcome == "expected") == sorted(
        e.check for e in ENTRIES)


# -- one reproduction per baseline entry


def test_every_baseline_entry_has_a_reproduction() -> None:
    for entry in ENTRIES:
        assert entry.check.startswith("usage.paths.") or entry.check in PREVIEW_REPRODUCTIONS \
            or entry.check in OTHER_REPRODUCTIONS


@needs_baseline
@pytest.mark.parametrize("entry", ENTRIES, ids=[e.check for e in ENTRIES])
def test_baseline_entry_cites_the_verifiers_line_it_comes_from(entry: Entry) -> None:
    root = verifiers_root()
    assert root is not None
    rel, _, line = entry.source.partition(":")
    lines = (root.parent / rel).read_text(encoding="utf-8").splitlines()
    assert entry.quote in lines[int(line) - 1]


USAGE_ENTRIES = [e for e in ENTRIES if e.check.startswith("usage.paths.")]


@needs_baseline
@pytest.mark.slow
@pytest.mark.parametrize("entry", USAGE_ENTRIES, ids=[e.check for e in USAGE_ENTRIES])
def test_reproduce_usage_entry(entry: Entry, raw: list[Finding]) -> None:
    """The claim is in the cited string, and the real run wrote elsewhere (or failed)."""
    f = by_check(raw)[entry.check]
    claimed = entry.check.rpartition(":")[2]
    root = verifiers_root()
    assert root is not None
    rel, _, line = f.details["source"].partition(":")
    said = (root.parent / rel).read_text(encoding="utf-8").splitlines()[int(line) - 1]
    if claimed == "<output-dir>":
        assert "<output-dir>" in said
        assert f.details["command"].startswith("vf-replay ") and "--rich" not in f.details[
            "command"]
        assert "valid boolean" in f.details["output"]
        return
    assert claimed in said
    written = f.details["written"]
    assert claimed not in written
    leaf = claimed.rpartition("/")[2]
    assert f"configs/resolved/{leaf}" in written


async def _play_hang(*, cancel: bool) -> Any:
    """One episode of the probe against a model that never answers: ended by a 1 s agent
    timeout, or cancelled by the caller once the request is previewed. Its notify log."""
    from vfcheck._episodes.recorder import TraceRecorder
    from vfcheck._episodes.runner import EnvRunner
    from vfcheck._episodes.task_loading import load_tasks
    from vfcheck._model import Reply, ScriptedModel, fixed

    env_args = {} if cancel else {"agent.timeout.rollout": 3.0}
    model = ScriptedModel(fixed(Reply.fault("hang")))
    async with EnvRunner.open(PROBE_ENV, paths=[str(BUNDLED_ENVS)], model=model,
                              env_args=env_args) as runner:
        task = load_tasks(runner.env, 1)[0]
        recorder = TraceRecorder()
        if not cancel:
            await runner.play(task, timeout=30, on_trace=recorder.on_trace)
        else:
            episode = asyncio.ensure_future(runner.play(task, on_trace=recorder.on_trace))
            for _ in range(1500):
                if any(log.trace.pending for log in recorder.logs.values()):
                    break
                await asyncio.sleep(0.02)
            episode.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await episode
            await asyncio.sleep(1.0)
    (log,) = recorder.logs.values()
    return log


async def _reproduce_agent_end() -> None:
    log = await _play_hang(cancel=False)
    (agent_end,) = [e for e in log.events if "agent.end" in e.boundaries]
    assert agent_end.pending > 0  # the hung request's preview, after the agent ended
    assert log.trace.stop_condition == "agent_timeout"
    assert log.trace.pending == []  # cleared later ...
    assert log.events[-1].label == "scoring.end" and log.events[-1].pending == 0  # ... seen here


async def _reproduce_cancel() -> None:
    log = await _play_hang(cancel=True)
    assert log.trace.pending == []  # abandon() cleared it ...
    assert log.events[-1].pending > 0  # ... but the watcher's last notify still shows it
    assert log.events[-1].label == "preview"


async def _reproduce_served_cancel() -> None:
    """verifiers' own server and client, nothing of vfcheck's between them but the mock: the
    client's run is cancelled (its fire-and-forget CancelRequest) once a preview arrived."""
    from verifiers.v1.serve import EnvClient, EnvServer
    from verifiers.v1.serve.delta import EpisodeAssembly

    from vfcheck._episodes.runner import EnvRunner
    from vfcheck._episodes.task_loading import load_tasks
    from vfcheck._model import Reply, ScriptedModel, fixed

    model = ScriptedModel(fixed(Reply.fault("hang")))
    assembly, deltas = EpisodeAssembly(), []
    async with EnvRunner.open(PROBE_ENV, paths=[str(BUNDLED_ENVS)], model=model) as runner:
        task = load_tasks(runner.env, 1)[0]
        server = EnvServer(runner.env.config, address="tcp://127.0.0.1:0")
        serving = asyncio.ensure_future(server.run())
        client = EnvClient(server.address)
        await client.wait_for_server_startup(timeout=30, interval=0.05)
        ctx = runner.ctx
        run = asyncio.ensure_future(client.run(
            ctx.client, ctx.model, ctx.sampling, task.data.model_dump(mode="json"),
            on_delta=lambda d: (deltas.append(d), assembly.apply(d))))
        for _ in range(1500):
            if any(t["pending"] for t in assembly.traces.values()):
                break
            await asyncio.sleep(0.02)
        sent = len(deltas)
        run.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await run
        await asyncio.sleep(2.0)  # the server aborts the rollout; nothing more is sent
        await client.close()
        serving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await serving
    assert sent and len(deltas) == sent
    (trace,) = assembly.traces.values()
    assert trace["pending"]  # the cancelled request's preview, for good


OTHER_REPRODUCTIONS = {"api.port_files.removed": "test_reproduce_port_file_entry"}
"""Entries reproduced by a test of their own (it needs a fixture env)."""

PREVIEW_REPRODUCTIONS = {
    "preview.agent_timeout.agent_end": _reproduce_agent_end,
    "preview.cancel.notified": _reproduce_cancel,
    "served.cancel.assembled": _reproduce_served_cancel,
}


@needs_baseline
@pytest.mark.slow
@pytest.mark.parametrize("check", sorted(PREVIEW_REPRODUCTIONS))
async def test_reproduce_preview_entry(check: str) -> None:
    assert check in {e.check for e in ENTRIES}
    await PREVIEW_REPRODUCTIONS[check]()


@needs_baseline
@pytest.mark.slow
def test_reproduce_port_file_entry(verifiers_fixtures: Path, tmp_path: Path) -> None:
    """A check of echo-tool-v1: once verifiers has stopped the tool servers, the port files
    it gave them are still there for the worker to remove (`starts.port_files` lists only
    the files it found)."""
    assert "api.port_files.removed" in {e.check for e in ENTRIES}
    done = check_report("echo-tool-v1", "--path", str(verifiers_fixtures), "--checks",
                        "episode", "--sample", "1", cwd=tmp_path)
    (env,) = done.report["envs"]
    assert env["starts"]["port_files"]
    assert all(p.startswith("/tmp/vf-port-") for p in env["starts"]["port_files"])


# -- the baseline is strict


@needs_baseline
@pytest.mark.slow
def test_an_altered_baseline_fails_the_real_run(raw: list[Finding]) -> None:
    """The shipped baseline with a fake entry for a check that passes (as if 0.4.0 still
    wrote configs/eval.json), one entry's observation altered, and one entry dropped."""
    assert SHIPPED is not None
    fake = _entry("usage.paths.vf-eval.USAGE:configs/resolved/eval.json",
                  "wrote configs/eval.json")
    altered = replace(ENTRIES[0], observed="wrote somewhere else")
    dropped = ENTRIES[-1]
    entries = (fake, altered, *ENTRIES[1:-1])
    judged = by_check(apply_baseline(raw, Baseline(SHIPPED.version, entries, "altered.toml")))
    assert judged[fake.check].outcome == "failed"
    assert "no longer holds" in judged[fake.check].message
    assert judged[altered.check].outcome == "failed"
    assert "wrote somewhere else" in judged[altered.check].message
    assert judged[dropped.check].outcome == "failed"
    assert "baseline" not in judged[dropped.check].details
    assert sum(f.bad for f in judged.values()) == 3


# -- feature detection on an older verifiers


def test_a_missing_hook_fails_its_api_check_and_skips_its_dependents(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from verifiers.v1.trace import Trace

    from vfcheck._library.api import hook_findings
    from vfcheck._library.scenarios import scenario_findings

    monkeypatch.delattr(Trace, "watch")
    findings, missing = hook_findings("0.3.1")
    watch = by_check(findings)["api.Trace.watch"]
    assert watch.outcome == "failed" and "verifiers 0.3.1 lacks Trace.watch" in watch.message
    played = asyncio.run(scenario_findings(PROBE_ENV, [BUNDLED_ENVS], missing))
    assert {f.family for f in played} == {"lifecycle", "preview"}
    assert all(f.outcome == "skipped" and "lacks Trace.watch" in f.message for f in played)


def test_usage_names_a_bare_command(tmp_path: Path) -> None:
    from vfcheck._library.source import Literal
    from vfcheck._library.usage import UsageString, names_findings

    text = "usage: eval [<taskset-id>] [options]\n       eval @ x --resume\n       prose"
    usage = UsageString("verifiers.v1.cli.eval.main", Literal(tmp_path / "m.py", 3, 4, text),
                        "vf-eval")
    scripts = {"vf-eval": "verifiers.v1.cli.eval.main:main"}
    found = by_check(names_findings([usage], scripts))
    assert found["usage.names.vf-eval"].outcome == "failed"
    assert "bare command(s) eval" in found["usage.names.vf-eval"].message
    assert found["usage.names.vf-eval"].details["commands"] == ["eval", "eval"]


@pytest.mark.slow
def test_front_ends_library_cli_and_plugin(raw: list[Finding], tmp_path: Path) -> None:
    """`vfcheck library --json` (its `--no-baseline` run, with the shipped baseline applied)
    and `pytest --vf-library` report the same findings; with the shipped baseline both are
    green and the baselined behaviours are expected/xfailed."""
    judged = apply_baseline(raw, SHIPPED)
    expected = [f for f in judged if f.outcome == "expected"]
    assert expected and not [f for f in judged if f.outcome in ("failed", "error")]
    plugin = subprocess.run(
        [sys.executable, "-m", "pytest", "--vf-library", "-p", "no:cacheprovider", "-q",
         "--vf-json", str(tmp_path / "plugin.json")],
        capture_output=True, text=True, timeout=600, cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert plugin.returncode == 0, plugin.stdout[-3000:]
    assert f"{len(expected)} xfailed" in plugin.stdout.splitlines()[-1]
    (env,) = json.loads((tmp_path / "plugin.json").read_text())["envs"]
    assert {f["check"]: f["outcome"] for f in env["findings"]} == {
        f.check: f.outcome for f in judged}


def test_a_missing_serve_hook_skips_the_served_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    from verifiers.v1.serve.client import EnvClient

    from vfcheck._library.api import hook_findings
    from vfcheck._library.served import SERVED_CHECKS, served_findings
    from vfcheck._library.suite import served_gap

    monkeypatch.delattr(EnvClient, "_request")
    findings, missing = hook_findings("0.3.9")
    assert by_check(findings)["api.serve.EnvClient._request"].outcome == "failed"
    played = asyncio.run(served_findings(PROBE_ENV, [BUNDLED_ENVS], served_gap(missing)))
    assert [f.check for f in played] == list(SERVED_CHECKS)
    assert all(f.outcome == "skipped" and "0.3.9 lacks EnvClient._request" in f.message
               for f in played)


def test_a_runtime_that_starts_processes_another_way_fails_the_warm_start_contract(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Warm starts fork what the subprocess runtime starts with `create_subprocess_exec` in
    a session of its own: a verifiers that stops doing so fails `vfcheck library` loudly."""
    from vfcheck._library import api

    assert api._subprocess_starts() is None

    async def run_background(self, argv, env, log):  # no session of its own
        return await asyncio.create_subprocess_exec(*argv, env=env)

    assert starts_contract_with(monkeypatch, "SubprocessRuntime.run_background",
                                run_background) == (
        "SubprocessRuntime.run_background lacks start_new_session=True")


def starts_contract_with(monkeypatch: pytest.MonkeyPatch, name: str, replacement) -> str | None:
    """`api.runtime.subprocess_starts`'s verdict where verifiers' `name` is `replacement`."""
    from vfcheck._library import api

    real = api._attr
    monkeypatch.setattr(api, "_attr", lambda dotted: replacement
                        if dotted.endswith(name) else real(dotted))
    return api._subprocess_starts()


def test_a_harness_program_started_another_way_fails_the_warm_start_contract(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Warm harness programs are `[interpreter, script]` as `prepare_uv_script` returns them
    not activated: a verifiers that wraps them otherwise fails `vfcheck library`."""
    async def prepare_uv_script(self, script, env=None, *, activate=True):
        return ["sh", "-c", 'exec "$@"', "uv-script", "python", "script.py"]

    assert starts_contract_with(monkeypatch, "Runtime.prepare_uv_script",
                                prepare_uv_script) == (
        "Runtime.prepare_uv_script(activate=False) no longer returns [interpreter, path]")


def test_another_activating_shell_command_fails_the_warm_start_contract(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An activated harness program is warm only through the shell command vfcheck knows
    (`warm_plan.ACTIVATE`): a verifiers that changes it fails `vfcheck library`."""
    async def prepare_uv_script(self, script, env=None, *, activate=True):
        interpreter, path = "python", "script.py"
        if not activate:
            return [interpreter, path]
        command = 'export VIRTUAL_ENV="$1"; shift; exec "$@"'
        return ["sh", "-c", command, "uv-script", "venv", interpreter, path]

    assert starts_contract_with(monkeypatch, "Runtime.prepare_uv_script",
                                prepare_uv_script) == (
        "Runtime.prepare_uv_script(activate=True) no longer runs the shell command vfcheck's "
        "warm starts know (warm_plan.ACTIVATE)")
