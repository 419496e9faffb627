"""Bad input, as a new user gives it, to every command of both front ends: one line saying
what and where, the documented exit code, never a traceback, a hang or a false exit 0.
Outputs that cannot be written, script entries and env args the env cannot take are usage
errors (`vfcheck` 2, pytest 4), found before any work (an env's own verdict needs its load).

The option values (both front ends, command line, `[tool.vfcheck]`, environment) have their own
table in tests/integration/test_options.py; this one holds the rest: each subcommand's own flags,
ports, scripts that name no task, endpoints nobody serves, and env modules that end the process
(`sys.exit()`, a `BaseException`) at import or in a hook.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from support import FIXTURES

FILES = {
    "stray.toml": '[[task]]\nkey = "vfc-echo:nope"\n[[task.turn]]\nreply = "x"\n',
    "far.toml": '[[task]]\nindex = 7\noracle = "x"\n',
    "bad.toml": "[[task]\n",
    "latin1.toml": "seed = 1 # caf\xe9\n",
    "report.json": '{"vfcheck": "0.1.0", "verifiers": "0.4.0", "seed": 0, "shard": null, '
                   '"envs": [{"id": "x", "findings": []}]}',
    "vfc_base_at_import.py": textwrap.dedent("""
        class ConfigMissing(BaseException):
            pass

        raise ConfigMissing("no grader configured")
    """),
    "vfc_exit_in_reward.py": textwrap.dedent('''
        """vfc-echo whose reward calls sys.exit() on task 1 (`ping`)."""
        import sys

        import verifiers.v1 as vf
        from vfc_echo import VfcEchoConfig, VfcEchoTask, echo_data


        class ExitTask(VfcEchoTask):
            @vf.reward(weight=1.0)
            async def echoed(self, trace: vf.Trace) -> float:
                if self.data.answer == "ping":
                    sys.exit("grader unavailable")
                return 0.0


        class ExitTaskset(vf.Taskset[ExitTask, VfcEchoConfig]):
            def load(self) -> list[ExitTask]:
                return [ExitTask(echo_data(p), self.config.task) for p in self.config.phrases]


        __all__ = ["ExitTaskset"]
    '''),
}
"""Files each case's folder gets: scripts and env modules a user might write."""


@dataclass(frozen=True)
class Bad:
    words: list[str]
    """`vfcheck ...` words, or `pytest ...` for the plugin; `{port}` is a port in use,
    `{closed}` one nothing listens on."""
    code: int
    says: str
    """A line of the output must contain this."""
    slow: bool = False
    """Runs a check worker or episodes (seconds, not milliseconds)."""
    marks: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    """Environment variables the command gets."""


PATH = ["--path", str(FIXTURES)]
CASES: dict[str, Bad] = {
    "no-command": Bad([], 2, "the following arguments are required: command"),
    "check-no-env": Bad(["check"], 2, "name at least one env"),
    "run-rollouts-zero": Bad(["run", "vfc-echo", "-r", "0"], 2,
                             "vfcheck: error: -r/--rollouts: '0' is not a whole number >= 1"),
    "run-concurrency-text": Bad(["run", "vfc-echo", "-c", "many"], 2,
                                "vfcheck: error: -c/--concurrency: 'many' is not a whole "
                                "number >= 1"),
    "run-timeout-nan": Bad(["run", "vfc-echo", "--timeout", "nan"], 2,
                           "vfcheck: error: --timeout: 'nan' is not a number of seconds >= 0.1"),
    "run-output-folder": Bad(["run", "vfc-echo", "-o", "."], 2,
                             "-o/--output: cannot write {cwd}: it is a folder"),
    "run-script-missing": Bad(["run", "vfc-echo", "--script", "none.toml"], 2,
                              "--script: 'none.toml' is not a file"),
    "mock-port-range": Bad(["mock-server", "--port", "70000"], 2,
                           "vfcheck: error: --port: '70000' is not a whole number >= 0 and "
                           "<= 65535"),
    "mock-port-busy": Bad(["mock-server", "--port", "{port}"], 1,
                          "mock-server cannot listen on 127.0.0.1:{port}: Address already in use"),
    "mock-script-broken": Bad(["mock-server", "--port", "0", "--script", "bad.toml"], 2,
                              "bad.toml: invalid TOML"),
    "run-base-url-not-a-url": Bad(["run", "vfc-echo", "--base-url", "localhost:8000"], 2,
                                  "--base-url: 'localhost:8000' is not an http:// or https:// "
                                  "URL"),
    "wheels-folder-not-makeable": Bad(["wheels", "/proc/vfcheck-wheels"], 2,
                                      "DIR: cannot fill /proc/vfcheck-wheels: the folder /proc "
                                      "is not writable (No such file or directory)"),
    "record-output-folder": Bad(["record", "vfc-echo", "--base-url", "http://127.0.0.1:9/v1",
                                 "-o", "."], 2,
                                "-o/--output: cannot write {cwd}: it is a folder"),
    "merge-not-a-report": Bad(["merge", "stray.toml"], 2, "stray.toml: not JSON"),
    "init-outside-a-package": Bad(["init"], 2, "no pyproject.toml in {cwd}: run vfcheck init "
                                  "in the env package's folder"),
    "list-checks-unknown-flag": Bad(["list-checks", "--everything"], 2,
                                    "unrecognized arguments: --everything"),
    "check-unknown-env": Bad(["check", "vfc-no-such-env", *PATH], 2,
                             "vfcheck: error: env 'vfc-no-such-env': no module "
                             "'vfc_no_such_env' in "),
    "check-typo-in-env-id": Bad(["check", "vfc-ech", *PATH], 2,
                                "(an env id is its module's name with dashes); did you mean "
                                "'vfc-echo'?"),
    "check-unknown-env-arg-key": Bad(
        ["check", "vfc-echo", *PATH, "--env-arg", "nope=1"], 2,
        "vfcheck: error: env arg nope=1: env 'vfc-echo' rejects it: unknown config key "
        "'taskset.nope'", slow=True),
    "check-a-file-path-for-an-env-id": Bad(
        ["check", f"{FIXTURES}/vfc_echo.py", "--checks", "load"], 1,
        f"looks like a file path; an env id is its module's name with dashes: try `vfc-echo "
        f"--path {FIXTURES}`", slow=True),
    "check-env-arg-of-the-wrong-type": Bad(
        ["check", "vfc-echo", *PATH, "--env-arg", "phrases=[1, 2]", "--checks", "load"], 2,
        "vfcheck: error: env arg phrases=[1, 2]: env 'vfc-echo' rejects it: config key "
        "'taskset.phrases.0': Input should be a valid string, got 1", slow=True),
    "check-base-exception-at-import": Bad(
        ["check", "vfc-base-at-import", "--path", ".", "--checks", "load"], 1,
        "raised ConfigMissing('no grader configured'), a BaseException that is not an "
        "Exception", slow=True),
    "check-exit-in-a-reward": Bad(
        ["check", "vfc-exit-in-reward", "--path", ".", *PATH, "--checks", "gold"], 1,
        "gold[1] FAILED: env 'vfc-exit-in-reward', task 1 (vfc-echo:ping): gold failed — env "
        "code called sys.exit('grader unavailable') (SystemExit) while it ran", slow=True),
    "check-script-key-matches-no-task": Bad(
        ["check", "vfc-echo", *PATH, "--script", "stray.toml", "--checks", "load"], 2,
        "vfcheck: error: env 'vfc-echo': the script stray.toml lists [[task]] 1 (key "
        "'vfc-echo:nope'), which matches none of its 3 task(s)", slow=True),
    "run-script-index-matches-no-task": Bad(
        ["run", "vfc-echo", *PATH, "--script", "far.toml"], 2,
        "far.toml: [[task]] 1 (index 7) matches no task of env 'vfc-echo' (3 task(s), "
        "indices 0-2)", slow=True),
    "run-closed-port": Bad(
        ["run", "vfc-echo", *PATH, "-n", "1", "--base-url", "http://127.0.0.1:{closed}/v1"], 1,
        "every episode (1) recorded an error (endpoint http://127.0.0.1:{closed}/v1)",
        slow=True),
    "pytest-exit-at-import": Bad(
        ["pytest", "--vf-env", "vfc-broken-load-exit", f"--vf-path={FIXTURES}"], 1,
        "called sys.exit('VFC_ECHO_CONFIG is not set') (SystemExit)", slow=True),
    "pytest-only-names-no-item": Bad(
        ["pytest", "--vf-env", "vfc-echo", f"--vf-path={FIXTURES}", "--vf-checks=load,gold",
         "--vf-only=gold[9]"], 4,
        "ERROR: vfcheck: --vf-only: 'gold[9]' names no item (the items are: load, gold[0], "
        "gold[1], gold[2])", slow=True),
    "pytest-only-keeps-a-failed-load": Bad(
        ["pytest", "--vf-env", "vfc-broken-load-exit", f"--vf-path={FIXTURES}",
         "--vf-only=gold[1]"], 1, "FAILED vfc-broken-load-exit::load", slow=True),
    "pytest-typo-in-env-id": Bad(
        ["pytest", "--vf-env", "vfc-ech", f"--vf-path={FIXTURES}"], 4,
        "ERROR: vfcheck: env 'vfc-ech': no module 'vfc_ech' in "),
    "pytest-a-file-path-for-an-env-id": Bad(
        ["pytest", "--vf-env", f"{FIXTURES}/vfc_echo.py", "-rA"], 1,
        "looks like a file path; an env id is its module's name with dashes", slow=True),
    "pytest-script-matches-no-task": Bad(
        ["pytest", "--vf-env", "vfc-echo", f"--vf-path={FIXTURES}", "--vf-script=stray.toml",
         "--vf-checks=load"], 4,
        "ERROR: vfcheck: env 'vfc-echo': the script stray.toml lists [[task]] 1 (key "
        "'vfc-echo:nope')", slow=True),
    # issue 22: outputs that cannot be written, up front (root may write anywhere os.access
    # looks, but not in /proc or /sys), and the env's own words for env args it rejects
    "check-json-in-proc": Bad(["check", "vfc-echo", "--json", "/proc/vfcheck.json"], 2,
                              "vfcheck: error: --json: cannot write /proc/vfcheck.json: the "
                              "folder /proc is not writable"),
    "check-junit-in-proc": Bad(["check", "vfc-echo", "--junit-xml", "/proc/vfcheck.xml"], 2,
                               "--junit-xml: cannot write /proc/vfcheck.xml: the folder /proc "
                               "is not writable"),
    "check-html-in-sys": Bad(["check", "vfc-echo", "--html", "/sys/vfcheck.html"], 2,
                             "--html: cannot write /sys/vfcheck.html: the folder /sys is not "
                             "writable"),
    "check-step-summary-in-proc": Bad(["check", "vfc-echo"], 2,
                                      "vfcheck: error: environment variable GITHUB_STEP_SUMMARY: "
                                      "cannot write /proc/summary.md: the folder /proc is not "
                                      "writable", env={"GITHUB_STEP_SUMMARY": "/proc/summary.md"}),
    "run-output-in-proc": Bad(["run", "vfc-echo", "-o", "/proc/episodes.jsonl"], 2,
                              "-o/--output: cannot write /proc/episodes.jsonl: the folder /proc "
                              "is not writable"),
    "record-output-in-proc": Bad(["record", "vfc-echo", "--base-url", "http://127.0.0.1:9/v1",
                                  "-o", "/proc/cassette.toml"], 2,
                                 "-o/--output: cannot write /proc/cassette.toml"),
    "merge-json-in-proc": Bad(["merge", "report.json", "--json", "/proc/merged.json"], 2,
                              "--json: cannot write /proc/merged.json"),
    "library-json-in-proc": Bad(["library", "--json", "/proc/library.json"], 2,
                                "--json: cannot write /proc/library.json"),
    "pytest-json-in-proc": Bad(["pytest", "--vf-env", "vfc-echo", "--vf-json",
                                "/proc/vfcheck.json"], 4,
                               "ERROR: vfcheck: --vf-json: cannot write /proc/vfcheck.json: the "
                               "folder /proc is not writable"),
    "pytest-junit-in-proc": Bad(["pytest", "--vf-env", "vfc-echo",
                                 "--junit-xml=/proc/vfcheck.xml"], 4,
                                "ERROR: vfcheck: --junit-xml: cannot write /proc/vfcheck.xml"),
    "pytest-html-in-sys": Bad(["pytest", "--vf-env", "vfc-echo", "--vf-html",
                               "/sys/vfcheck.html"], 4,
                              "ERROR: vfcheck: --vf-html: cannot write /sys/vfcheck.html"),
    "pytest-step-summary-in-proc": Bad(["pytest", "--vf-env", "vfc-echo"], 4,
                                       "ERROR: vfcheck: environment variable "
                                       "GITHUB_STEP_SUMMARY: cannot write /proc/summary.md",
                                       env={"GITHUB_STEP_SUMMARY": "/proc/summary.md"}),
    "check-env-arg-unknown-key": Bad(
        ["check", "vfc-echo", *PATH, "--env-arg", "phrasez=[1]", "--checks", "load"], 2,
        "vfcheck: error: env arg phrasez=[1]: env 'vfc-echo' rejects it: unknown config key "
        "'taskset.phrasez' (Extra inputs are not permitted)", slow=True),
    "check-env-arg-names-no-harness": Bad(
        ["check", "vfc-echo", *PATH, "--env-arg", "agent.harness.id=nope", "--checks", "load"],
        2, "vfcheck: error: env arg agent.harness.id=\"nope\": env 'vfc-echo' rejects it: "
        "ModuleNotFoundError: harness 'nope' not found", slow=True),
    "run-env-arg-of-the-wrong-type": Bad(
        ["run", "vfc-echo", *PATH, "--env-arg", "phrases=[1, 2]"], 2,
        "vfcheck: error: env arg phrases=[1, 2]: env 'vfc-echo' rejects it: config key "
        "'taskset.phrases.0': Input should be a valid string, got 1", slow=True),
    "run-env-arg-unknown-key": Bad(
        ["run", "vfc-echo", *PATH, "--env-arg", "phrasez=1"], 2,
        "vfcheck: error: env arg phrasez=1: env 'vfc-echo' rejects it: unknown config key "
        "'taskset.phrasez'", slow=True),
    "pytest-env-arg-of-the-wrong-type": Bad(
        ["pytest", "--vf-env", "vfc-echo", f"--vf-path={FIXTURES}", "--vf-env-arg",
         "phrases=[1, 2]", "--vf-checks=load"], 4,
        "ERROR: vfcheck: env arg phrases=[1, 2]: env 'vfc-echo' rejects it: config key "
        "'taskset.phrases.0'", slow=True),
    "pytest-xdist-script-matches-no-task": Bad(
        ["pytest", "--vf-env", "vfc-echo", f"--vf-path={FIXTURES}", "--vf-script=stray.toml",
         "--vf-checks=load", "-n", "2"], 4,
        "ERROR: vfcheck: env 'vfc-echo': the script stray.toml lists [[task]] 1 (key "
        "'vfc-echo:nope')", slow=True),
    "check-script-index-matches-no-task": Bad(
        ["check", "vfc-echo", *PATH, "--script", "far.toml", "--checks", "load"], 2,
        "vfcheck: error: env 'vfc-echo': the script far.toml lists [[task]] 1 (index 7), which "
        "matches none of its 3 task(s)", slow=True),
    # issue 22: 30 more of our own
    "check-empty-env-id": Bad(["check", ""], 2, "vfcheck: error: ENV: '' is empty"),
    "pytest-empty-env-id": Bad(["pytest", "--vf-env", " "], 4,
                               "ERROR: vfcheck: --vf-env: ' ' is empty"),
    "pytest-only-empty": Bad(["pytest", "--vf-env", "vfc-echo", "--vf-only="], 4,
                             "ERROR: vfcheck: --vf-only: '' is empty"),
    "check-two-reports-one-file": Bad(["check", "vfc-echo", "--json", "r.out", "--html",
                                       "r.out"], 2,
                                      "vfcheck: error: --html: {cwd}/r.out is the --json "
                                      "report's file too"),
    "pytest-two-reports-one-file": Bad(["pytest", "--vf-env", "vfc-echo", "--vf-json=r.out",
                                        "--junit-xml=r.out"], 4,
                                       "ERROR: vfcheck: --junit-xml: {cwd}/r.out is the "
                                       "--vf-json report's file too"),
    "check-json-a-folder": Bad(["check", "vfc-echo", "--json", "."], 2,
                               "--json: cannot write {cwd}: it is a folder"),
    "check-env-arg-without-value": Bad(["check", "vfc-echo", "--env-arg", "num_tasks"], 2,
                                       "vfcheck: error: env arg 'num_tasks' is not KEY=VALUE"),
    "check-env-arg-empty-key": Bad(["check", "vfc-echo", "--env-arg", "=5"], 2,
                                   "env arg '=5' is not KEY=VALUE"),
    "check-env-arg-empty-key-part": Bad(["check", "vfc-echo", "--env-arg", "agent..x=5"], 2,
                                        "env arg 'agent..x=5': the dotted KEY 'agent..x' has "
                                        "an empty part"),
    "pytest-env-arg-empty-key-part": Bad(["pytest", "--vf-env", "vfc-echo", "--vf-env-arg",
                                          ".x=5"], 4,
                                         "ERROR: vfcheck: env arg '.x=5': the dotted KEY '.x' "
                                         "has an empty part"),
    "check-script-not-utf8": Bad(["check", "vfc-echo", "--script", "latin1.toml"], 2,
                                 "--script: {cwd}/latin1.toml: cannot read the script: "
                                 "'utf-8' codec can't decode"),
    "check-script-a-folder": Bad(["check", "vfc-echo", "--script", "."], 2,
                                 "--script: '.' is not a file"),
    "check-script-not-toml": Bad(["check", "vfc-echo", "--script", "bad.toml"], 2,
                                 "bad.toml: invalid TOML"),
    "check-path-a-file": Bad(["check", "vfc-echo", "--path", "stray.toml"], 2,
                             "--path: {cwd}/stray.toml is a file, not a folder"),
    "pytest-path-a-file": Bad(["pytest", "--vf-env", "vfc-echo", "--vf-path=stray.toml"], 4,
                              "ERROR: vfcheck: --vf-path: {cwd}/stray.toml is a file, not a "
                              "folder"),
    "check-golden-update-in-proc": Bad(["check", "vfc-echo", "--golden-dir", "/proc/golden",
                                        "--golden-update"], 2,
                                       "--golden-update: cannot write golden traces to "
                                       "/proc/golden: the folder /proc is not writable"),
    "check-checks-names-nothing": Bad(["check", "vfc-echo", "--checks", ","], 2,
                                      "--checks: ',' names nothing"),
    "check-episodes-at-once-zero": Bad(["check", "vfc-echo", "--episodes-at-once", "0"], 2,
                                       "--episodes-at-once: '0' is not a whole number >= 1"),
    "pytest-envs-at-once-text": Bad(["pytest", "--vf-env", "vfc-echo", "--vf-envs-at-once",
                                     "all"], 4,
                                    "ERROR: vfcheck: --vf-envs-at-once: 'all' is not a whole "
                                    "number >= 1"),
    "check-episodes-at-once-env-var": Bad(["check", "vfc-echo"], 2,
                                          "environment variable VFCHECK_EPISODES_AT_ONCE: "
                                          "'-3' is not a whole number >= 1",
                                          env={"VFCHECK_EPISODES_AT_ONCE": "-3"}),
    "check-from-validate-a-file": Bad(["check", "--from-validate", "stray.toml"], 2,
                                      "stray.toml: not a directory"),
    "check-from-validate-no-run": Bad(["check", "--from-validate", "."], 2,
                                      "no summary.json (is this a vf-validate run directory?)"),
    "check-shard-zero": Bad(["check", "vfc-echo", "--shard", "0/2"], 2,
                            "--shard: '0/2': shard K of N needs 1 <= K <= N"),
    "merge-one-report-twice": Bad(["merge", "report.json", "./report.json"], 2,
                                  "vfcheck: error: report.json: given twice"),
    "merge-no-such-report": Bad(["merge", "gone.json"], 2, "gone.json: no such file"),
    "run-script-not-toml": Bad(["run", "vfc-echo", "--script", "bad.toml"], 2,
                               "bad.toml: invalid TOML"),
    "mock-port-negative": Bad(["mock-server", "--port", "-1"], 2,
                              "vfcheck: error: --port: '-1' is not a whole number >= 0 and "
                              "<= 65535"),
    "record-no-endpoint": Bad(["record", "vfc-echo", "-o", "c.toml"], 2,
                              "the following arguments are required: --base-url"),
    "pytest-timeout-zero": Bad(["pytest", "--vf-env", "vfc-echo", "--vf-timeout", "0"], 4,
                               "ERROR: vfcheck: --vf-timeout: '0' is not a number of seconds "
                               "> 0"),
}


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port something listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.mark.slow
@pytest.mark.parametrize("case", [pytest.param(name, marks=[pytest.mark.slow] if bad.slow
                                               else []) for name, bad in CASES.items()])
def test_a_bad_input_is_one_line_and_its_exit_code(case: str, tmp_path: Path,
                                                   busy_port: int) -> None:
    bad = CASES[case]
    for name, text in FILES.items():
        (tmp_path / name).write_text(text, encoding="latin-1" if "latin1" in name else "utf-8")
    values = {"port": str(busy_port), "closed": str(closed_port()), "cwd": str(tmp_path)}
    words = [w.format(**values) for w in bad.words]
    if words[:1] == ["pytest"]:
        command = [sys.executable, "-m", "pytest", *words[1:], "-p", "no:cacheprovider", "-q"]
    else:
        command = [sys.executable, "-m", "vfcheck", *words]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL, env={**os.environ, **bad.env})
    output = done.stdout + done.stderr
    assert done.returncode == bad.code, output[-3000:]
    says = bad.says.format(**values)
    assert any(says in line for line in output.splitlines()), output[-3000:]
    assert "Traceback" not in output, output[-3000:]
