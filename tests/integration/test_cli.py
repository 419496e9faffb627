"""The `vfcheck` command, run as a user runs it (a separate process)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import BROKEN_GOLD, BROKEN_GOLD_ENV, CheckCache, basic_check, vfcheck

BIN = Path(sys.executable).parent


@pytest.mark.slow
def test_run_plays_the_sample_and_writes_episodes(fixtures_dir: Path, tmp_path: Path) -> None:
    done = vfcheck("run", "vfc-echo", "--path", str(fixtures_dir), "-n", "2", "-r", "2",
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "vfcheck-runs" / "vfc-echo" / "episodes.jsonl"
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 4 and {line["reward"] for line in lines} == {1.0}
    assert "vfc-echo: 4 episode(s)" in done.stdout
    assert "role 'agent': fast tier" in done.stderr


@pytest.mark.slow
def test_run_finds_the_installed_uv_without_the_venv_on_path(
    fixtures_dir: Path, tmp_path: Path
) -> None:
    """Harness programs are uv scripts; a venv python called by full path has no uv on
    PATH, so vfcheck puts the uv of its `uv` dependency there."""
    done = vfcheck("run", "vfc-echo", "--path", str(fixtures_dir), "-n", "1", "--harness", "env",
                   cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-2000:]
    line = (tmp_path / "vfcheck-runs" / "vfc-echo" / "episodes.jsonl").read_text()
    assert json.loads(line)["reward"] == 1.0


def test_run_of_an_unknown_env_is_a_usage_error_in_one_line(tmp_path: Path) -> None:
    done = vfcheck("run", "no-such-env-v9", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == ("vfcheck: error: env 'no-such-env-v9': no module 'no_such_env_v9' "
                           "in the working directory and sys.path (an env id is its module's "
                           "name with dashes)\n")


@pytest.mark.slow
def test_run_with_a_broken_script_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[[task]]\nindex = 0\n[[task.turn]]\nanswer = 'x'\n")
    done = vfcheck("run", "vfc-echo", "--script", str(bad), cwd=tmp_path)
    assert done.returncode == 2
    assert "bad.toml" in done.stderr and "answer" in done.stderr


@pytest.mark.slow
def test_run_of_an_infinite_taskset_without_n(fixtures_dir: Path, tmp_path: Path) -> None:
    done = vfcheck("run", "vfc-infinite", "--path", str(fixtures_dir), cwd=tmp_path)
    assert done.returncode == 1
    assert "is infinite" in done.stderr and "-n N" in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("sample", [None, "2"])
def test_check_of_an_infinite_taskset_without_n_takes_the_sample(
    fixtures_dir: Path, checked: CheckCache, sample: str | None
) -> None:
    """As the episode families do: the first `--sample` tasks (3 by default), said in the
    `load` finding, the env's section and the JSON report; the fresh load of
    `determinism.load` takes the same bound."""
    extra = [] if sample is None else ["--sample", sample]
    run = checked.check("vfc-infinite", "--path", str(fixtures_dir), "--checks",
                        "load,episode,determinism", *extra)
    env = run.envs["vfc-infinite"]
    loaded = 3 if sample is None else 2
    findings = {(f["check"], (f["task"] or {}).get("index")): f for f in env["findings"]}
    outcomes = {unit: f["outcome"] for unit, f in findings.items()}
    assert set(outcomes.values()) == {"passed"}, run.stdout[-3000:]
    assert {("load", None), ("determinism.load", None),
            *[("episode", i) for i in range(loaded)]} <= set(outcomes)
    assert ("episode", loaded) not in outcomes
    assert (f"VfcInfiniteTaskset is infinite (INFINITE = True), so vfcheck loaded its first "
            f"{loaded}, the sample") in findings[("load", None)]["message"]
    assert len(env["tasks"]) == loaded
    assert env["infinite_taskset"] == {"taskset": "VfcInfiniteTaskset", "loaded": loaded}
    assert (f"vfc-infinite tasks: the first {loaded} of VfcInfiniteTaskset, an infinite "
            "taskset") in run.stdout
    assert run.returncode == 0, run.stdout[-3000:]


@pytest.fixture
def mock_server(tmp_path: Path) -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "vfcheck", "mock-server", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    try:
        assert url.startswith("http://127.0.0.1:"), url
        yield url
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=10)


def vf_eval_traces(base_url: str, fixtures_dir: Path, out: Path) -> list[Any]:
    """The first trace of each of two vf-eval episodes of vfc-echo, played against the
    model server at `base_url` (`vfcheck mock-server`)."""
    done = subprocess.run(
        [str(BIN / "vf-eval"), "vfc-echo", "-n", "2", "--push", "false",
         "--client.base-url", base_url, "--client.api-key-var", "VFCHECK_API_KEY",
         "--env.agent.harness.id", "null", "--env.agent.runtime.type", "subprocess",
         "--model", "vfcheck-scripted", "-o", str(out / "out")],
        capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL, cwd=out,
        env={**os.environ, "VFCHECK_API_KEY": "x", "PYTHONPATH": str(fixtures_dir),
             "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (traces,) = (out / "out").rglob("traces.jsonl")
    return [json.loads(line)["traces"][0] for line in traces.read_text().splitlines()]


@pytest.mark.slow
def test_mock_server_answers_the_real_vf_eval(
    mock_server: str, fixtures_dir: Path, tmp_path: Path
) -> None:
    """vf-eval runs in another process: the loopback server is its model."""
    rewards = [t["rewards"] for t in vf_eval_traces(mock_server, fixtures_dir, tmp_path)]
    assert len(rewards) == 2
    assert all(r["echoed"]["score"] == 1.0 for r in rewards), rewards


@pytest.mark.slow
def test_check_exit_code_json_and_junit(checked: CheckCache) -> None:
    done = checked.check(*BROKEN_GOLD, env=BROKEN_GOLD_ENV)
    assert done.returncode == 1, done.stderr[-2000:]
    report = done.report
    assert report["verifiers"] and report["vfcheck"]
    (env,) = report["envs"]
    outcomes = {(f["check"], (f["task"] or {}).get("index")): f["outcome"]
                for f in env["findings"]}
    assert outcomes == {("load", None): "passed", ("gold", 0): "passed",
                        ("gold", 1): "failed", ("gold", 2): "skipped"}
    import xml.etree.ElementTree as ET

    suite = ET.parse(done.folder / "report.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "1" and suite.get("skipped") == "1"
    failed = [c.get("name") for c in suite if c.find("failure") is not None]
    assert failed == ["gold[1]"]
    assert "gold[1] FAILED: env 'vfc-broken-gold', task 1 (vfc-echo:ping)" in done.stdout


@pytest.mark.slow
def test_check_passes_with_exit_0_on_a_well_behaved_env(checked: CheckCache) -> None:
    done = checked.check(*basic_check("vfc-echo"))  # the agreement tests read it too
    assert done.returncode == 0, done.stdout[-2000:]
    assert "verifiers 0.4" in done.stdout  # the header says what ran


@pytest.mark.slow
def test_check_usage_errors_exit_2(tmp_path: Path) -> None:
    assert vfcheck("check", cwd=tmp_path).returncode == 2
    done = vfcheck("check", "vfc-echo", "--checks", "gold,golden-typo", cwd=tmp_path)
    assert done.returncode == 2
    assert "unknown check family golden-typo" in done.stderr


@pytest.mark.slow
def test_check_reads_tool_vfcheck_from_pyproject(fixtures_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.vfcheck]\npaths = ["{fixtures_dir}"]\nchecks = ["noop"]\nnum_tasks = 1\n')
    done = vfcheck("check", "vfc-broken-noop", "--json", "r.json", cwd=tmp_path)
    env = json.loads((tmp_path / "r.json").read_text())["envs"][0]
    assert [(f["check"], (f["task"] or {}).get("index")) for f in env["findings"]] == [
        ("load", None), ("noop", 0)]
    assert done.returncode == 0


@pytest.mark.slow
def test_list_checks_prints_the_catalogue(tmp_path: Path) -> None:
    done = vfcheck("list-checks", cwd=tmp_path)
    assert done.returncode == 0
    for family in ("load", "determinism.load", "setup", "gold", "noop", "episode",
                   "lifecycle", "preview", "robustness", "determinism.replay"):
        assert family in done.stdout


@pytest.mark.slow
def test_a_bad_env_arg_is_one_line_in_both_front_ends(fixtures_dir: Path, tmp_path: Path) -> None:
    done = vfcheck("check", "vfc-echo", "--env-arg", "no-equals-sign", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == "vfcheck: error: env arg 'no-equals-sign' is not KEY=VALUE"
    plugin = subprocess.run(
        [sys.executable, "-m", "pytest", "--vf-env", "vfc-echo", "--vf-env-arg", "x",
         "-p", "no:cacheprovider"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert plugin.returncode == pytest.ExitCode.USAGE_ERROR
    assert "vfcheck: env arg 'x' is not KEY=VALUE" in plugin.stderr


@pytest.mark.slow
def test_an_unknown_env_config_key_names_the_key(fixtures_dir: Path, tmp_path: Path) -> None:
    done = vfcheck("check", "vfc-echo", "--path", str(fixtures_dir), "--env-arg",
                   "phrasez=[1]", "--checks", "gold", "--json", "r.json", cwd=tmp_path)
    assert done.returncode == 2  # the user's input: a usage error, in one line
    assert done.stderr.splitlines()[-1] == (
        "vfcheck: error: env arg phrasez=[1]: env 'vfc-echo' rejects it: unknown config key "
        "'taskset.phrasez' (Extra inputs are not permitted)")
    (load,) = [f for f in json.loads((tmp_path / "r.json").read_text())["envs"][0]["findings"]
               if f["check"] == "load"]  # the report written so far stays
    assert "unknown config key" in load["message"] and "phrasez" in load["message"]
    assert load["outcome"] == "error" and load["details"]["usage"] is True


@pytest.mark.slow
def test_the_header_replay_line_runs_the_same_checks_in_both_front_ends(
    fixtures_dir: Path, tmp_path: Path
) -> None:
    import shlex

    done = vfcheck("check", "vfc-echo", "--path", str(fixtures_dir), "--checks", "setup",
                   "--sample", "1", cwd=tmp_path)
    header = done.stdout.splitlines()[:2]
    assert header[0].startswith("vfcheck ") and " · sample 1 · timeout 60s" in header[0]
    assert header[1] == ("rerun: vfcheck check vfc-echo --path "
                         f"{shlex.quote(str(fixtures_dir))} --checks setup --sample 1")
    words = shlex.split(header[1].removeprefix("rerun: "))
    again = vfcheck(*words[1:], cwd=tmp_path)
    assert (again.returncode, again.stdout.splitlines()[:2]) == (done.returncode, header)
    plugin = subprocess.run(
        [sys.executable, "-m", "pytest", "--vf-env", "vfc-echo", f"--vf-path={fixtures_dir}",
         "--vf-checks", "setup", "--vf-sample", "1", "-p", "no:cacheprovider"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert plugin.returncode == 0, plugin.stdout[-2000:]
    assert header[0] in plugin.stdout.splitlines()  # one header, both front ends
    assert ("rerun: pytest --vf-env vfc-echo "
            f"{shlex.quote(f'--vf-path={fixtures_dir}')} --vf-checks setup --vf-sample 1"
            ) in plugin.stdout.splitlines()


@pytest.mark.slow
def test_the_seed_that_plays_is_the_one_every_report_names(
    fixtures_dir: Path, tmp_path: Path
) -> None:
    """No `--seed`: the script file's seed plays, and the header, the JSON and HTML reports
    and the golden traces' header all say so (they used to say None or 0)."""
    (tmp_path / "s.toml").write_text("seed = 5\n")
    done = vfcheck("check", "vfc-echo", "--path", str(fixtures_dir), "--script", "s.toml",
                   "--checks", "golden", "--sample", "1", "--golden-dir", "g",
                   "--golden-update", "--json", "r.json", "--html", "r.html", cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert " · seed 5 · " in done.stdout.splitlines()[0]
    assert json.loads((tmp_path / "r.json").read_text())["seed"] == 5
    assert "seed 5" in (tmp_path / "r.html").read_text()
    (golden,) = (tmp_path / "g" / "vfc-echo").iterdir()
    assert json.loads(golden.read_text())["header"]["seed"] == 5
    assert "--seed" not in done.stdout.splitlines()[1]  # the replayed script plays it


def test_the_header_says_how_much_of_the_machine_the_run_takes(
    fixtures_dir: Path, tmp_path: Path
) -> None:
    """Sized to the free cores and memory unless the user says; both front ends' header
    says what was chosen (the last line, after the replay line)."""
    measured = vfcheck("check", "vfc-echo", "--path", str(fixtures_dir), "--checks", "load",
                       cwd=tmp_path)
    line = next(x for x in measured.stdout.splitlines() if x.startswith("concurrency: "))
    assert " cores, " in line and " busy, " in line and line.endswith("GiB free)"), line
    given = vfcheck("check", "vfc-echo", "--path", str(fixtures_dir), "--checks", "load",
                    "--episodes-at-once", "3", cwd=tmp_path,
                    env={"VFCHECK_ENVS_AT_ONCE": "1"})
    line = next(x for x in given.stdout.splitlines() if x.startswith("concurrency: "))
    assert line.startswith("concurrency: 1 env(s) at once, per env 3 chat or 3 tool/harness "
                           "episode(s) in flight ("), line
    assert line.endswith("; --envs-at-once and --episodes-at-once given)"), line
    plugin = subprocess.run(
        [sys.executable, "-m", "pytest", "--vf-env", "vfc-echo", f"--vf-path={fixtures_dir}",
         "--vf-checks", "load", "--vf-episodes-at-once", "2", "-p", "no:cacheprovider"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert plugin.returncode == 0, plugin.stdout[-2000:]
    assert any(x.startswith("concurrency: 1 env(s) at once, per env 2 chat or 2 ")
               for x in plugin.stdout.splitlines()), plugin.stdout[-2000:]
