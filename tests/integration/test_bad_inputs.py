"""Bad input, as a new user gives it, to every command of both front ends: one line saying
what and where, the documented exit code, never a traceback, a hang or a false exit 0.

The option values (both front ends, command line, `[tool.vfcheck]`, environment) have their
own table in tests/test_options.py; this one holds the rest: each subcommand's own flags,
ports, scripts that name no task, endpoints nobody serves, and env modules that end the
process (`sys.exit()`, a `BaseException`) at import or in a hook.
"""

from __future__ import annotations

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


PATH = ["--path", str(FIXTURES)]
CASES: dict[str, Bad] = {
    "no-command": Bad([], 2, "the following arguments are required: command"),
    "check-no-env": Bad(["check"], 2, "name at least one env"),
    "run-rollouts-zero": Bad(["run", "vfc-echo", "-r", "0"], 2,
                             "argument -r/--rollouts: must be an integer >= 1, got '0'"),
    "run-concurrency-text": Bad(["run", "vfc-echo", "-c", "many"], 2,
                                "argument -c/--concurrency: must be an integer >= 1, got 'many'"),
    "run-timeout-nan": Bad(["run", "vfc-echo", "--timeout", "nan"], 2,
                           "argument --timeout: must be a number >= 0.1, got 'nan'"),
    "run-output-folder": Bad(["run", "vfc-echo", "-o", "."], 2,
                             "-o/--output: cannot write {cwd}: it is a folder"),
    "run-script-missing": Bad(["run", "vfc-echo", "--script", "none.toml"], 2,
                              "--script: 'none.toml' is not a file"),
    "mock-port-range": Bad(["mock-server", "--port", "70000"], 2,
                           "argument --port: must be an integer >= 0 and <= 65535"),
    "mock-port-busy": Bad(["mock-server", "--port", "{port}"], 1,
                          "mock-server cannot listen on 127.0.0.1:{port}: Address already in use"),
    "mock-script-broken": Bad(["mock-server", "--port", "0", "--script", "bad.toml"], 2,
                              "bad.toml: invalid TOML"),
    "run-base-url-not-a-url": Bad(["run", "vfc-echo", "--base-url", "localhost:8000"], 2,
                                  "--base-url: 'localhost:8000' is not an http:// or https:// "
                                  "URL"),
    "wheels-folder-not-makeable": Bad(["wheels", "/proc/vfcheck-wheels"], 1,
                                      "cannot fill /proc/vfcheck-wheels: No such file or "
                                      "directory"),
    "record-output-folder": Bad(["record", "vfc-echo", "--base-url", "http://127.0.0.1:9/v1",
                                 "-o", "."], 2,
                                "-o/--output: cannot write {cwd}: it is a folder"),
    "merge-not-a-report": Bad(["merge", "stray.toml"], 2, "stray.toml: not JSON"),
    "init-outside-a-package": Bad(["init"], 2, "no pyproject.toml in {cwd}: run vfcheck init "
                                  "in the env package's folder"),
    "list-checks-unknown-flag": Bad(["list-checks", "--everything"], 2,
                                    "unrecognized arguments: --everything"),
    "check-unknown-env": Bad(["check", "vfc-no-such-env", *PATH], 1,
                             "taskset 'vfc-no-such-env' not found", slow=True),
    "check-a-file-path-for-an-env-id": Bad(
        ["check", f"{FIXTURES}/vfc_echo.py", "--checks", "load"], 1,
        f"looks like a file path; an env id is its module's name with dashes: try `vfc-echo "
        f"--path {FIXTURES}`", slow=True),
    "check-env-arg-of-the-wrong-type": Bad(
        ["check", "vfc-echo", *PATH, "--env-arg", "phrases=[1, 2]", "--checks", "load"], 1,
        "config key 'taskset.phrases.0': Input should be a valid string, got 1", slow=True),
    "check-base-exception-at-import": Bad(
        ["check", "vfc-base-at-import", "--path", ".", "--checks", "load"], 1,
        "raised ConfigMissing('no grader configured'), a BaseException that is not an "
        "Exception", slow=True),
    "check-exit-in-a-reward": Bad(
        ["check", "vfc-exit-in-reward", "--path", ".", *PATH, "--checks", "gold"], 1,
        "gold[1] FAILED: env 'vfc-exit-in-reward', task 1 (vfc-echo:ping): gold failed — env "
        "code called sys.exit('grader unavailable') (SystemExit) while it ran", slow=True),
    "check-script-key-matches-no-task": Bad(
        ["check", "vfc-echo", *PATH, "--script", "stray.toml", "--checks", "load"], 1,
        "the script stray.toml lists [[task]] 1 (key 'vfc-echo:nope'), which matches none of "
        "its 3 task(s)", slow=True),
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
        ["pytest", "--vf-env", "vfc-no-such-env", f"--vf-path={FIXTURES}", "--vf-only=gold[1]"],
        1, "FAILED vfc-no-such-env::load", slow=True),
    "pytest-a-file-path-for-an-env-id": Bad(
        ["pytest", "--vf-env", f"{FIXTURES}/vfc_echo.py", "-rA"], 1,
        "looks like a file path; an env id is its module's name with dashes", slow=True),
    "pytest-script-matches-no-task": Bad(
        ["pytest", "--vf-env", "vfc-echo", f"--vf-path={FIXTURES}", "--vf-script=stray.toml",
         "--vf-checks=load"], 1, "lists [[task]] 1 (key 'vfc-echo:nope')", slow=True),
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
        (tmp_path / name).write_text(text)
    values = {"port": str(busy_port), "closed": str(closed_port()), "cwd": str(tmp_path)}
    words = [w.format(**values) for w in bad.words]
    if words[:1] == ["pytest"]:
        command = [sys.executable, "-m", "pytest", *words[1:], "-p", "no:cacheprovider", "-q"]
    else:
        command = [sys.executable, "-m", "vfcheck", *words]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)
    output = done.stdout + done.stderr
    assert done.returncode == bad.code, output[-3000:]
    says = bad.says.format(**values)
    assert any(says in line for line in output.splitlines()), output[-3000:]
    assert "Traceback" not in output, output[-3000:]
