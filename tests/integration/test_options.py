"""The option table (`vfcheck._options.table.OPTIONS`) through the real front ends: every bad
value, from the command line, pyproject.toml or the environment, is a one-line usage error
in both front ends before any work starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]


# -- bad values, in both front ends


BAD: list[tuple[str, list[str], list[str], str, str]] = [
    # (case, `vfcheck check` words, pytest words, `vfcheck` message, pytest message)
    ("timeout-text", ["--timeout", "abc"], ["--vf-timeout", "abc"],
     "--timeout: 'abc' is not a number of seconds > 0",
     "--vf-timeout: 'abc' is not a number of seconds > 0"),
    ("timeout-negative", ["--timeout", "-5"], ["--vf-timeout", "-5"],
     "--timeout: '-5' is not a number of seconds > 0",
     "--vf-timeout: '-5' is not a number of seconds > 0"),
    ("timeout-nan", ["--timeout", "nan"], ["--vf-timeout=nan"],
     "--timeout: 'nan' is not a number of seconds > 0",
     "--vf-timeout: 'nan' is not a number of seconds > 0"),
    ("sample-negative", ["--sample", "-2"], ["--vf-sample", "-2"],
     "--sample: '-2' is not a whole number >= 1", "--vf-sample: '-2' is not a whole number >= 1"),
    ("num-tasks-negative", ["-n", "-1"], ["--vf-num-tasks", "-1"],
     "-n/--num-tasks: '-1' is not a whole number >= 1",
     "--vf-num-tasks: '-1' is not a whole number >= 1"),
    ("seed-text", ["--seed", "1.5"], ["--vf-seed", "1.5"],
     "--seed: '1.5' is not a whole number", "--vf-seed: '1.5' is not a whole number"),
    ("harness", ["--harness", "slow"], ["--vf-harness", "slow"],
     "--harness: 'slow' is not one of env, fast", "--vf-harness: 'slow' is not one of env, fast"),
    ("family", ["--checks", "gold,golden-typo"], ["--vf-checks", "gold,golden-typo"],
     "--checks: unknown check family golden-typo (did you mean 'golden'? known: load, ",
     "--vf-checks: unknown check family golden-typo (did you mean 'golden'? known: load, "),
    ("allow-typo", ["--allow", "exploitt.echo-prompt"], ["--vf-allow", "exploitt.echo-prompt"],
     "--allow: allow pattern 'exploitt.echo-prompt' names no check (did you mean "
     "'exploit.echo-prompt'?)",
     "--vf-allow: allow pattern 'exploitt.echo-prompt' names no check (did you mean "
     "'exploit.echo-prompt'?)"),
    ("pyproject-allow-typo", ["+allow = ['vfc-echo::exploit.echo-promt']"],
     ["+allow = ['vfc-echo::exploit.echo-promt']"],
     "pyproject.toml: [tool.vfcheck] allow: allow pattern 'vfc-echo::exploit.echo-promt' names "
     "no check (did you mean 'exploit.echo-prompt'?)",
     "pyproject.toml: [tool.vfcheck] allow: allow pattern 'vfc-echo::exploit.echo-promt' names "
     "no check (did you mean 'exploit.echo-prompt'?)"),
    ("pyproject-checks-typo", ["+checks = ['gold', 'noopp']"], ["+checks = ['gold', 'noopp']"],
     "pyproject.toml: [tool.vfcheck] checks: unknown check family noopp (did you mean 'noop'?",
     "pyproject.toml: [tool.vfcheck] checks: unknown check family noopp (did you mean 'noop'?"),
    ("path", ["--path", "nowhere"], ["--vf-path", "nowhere"],
     "--path: the folder {cwd}/nowhere does not exist",
     "--vf-path: the folder {cwd}/nowhere does not exist"),
    ("json-is-a-folder", ["--json", "out"], ["--vf-json", "out"],
     "--json: cannot write {cwd}/out: it is a folder",
     "--vf-json: cannot write {cwd}/out: it is a folder"),
    ("html-is-a-folder", ["--html", "out"], ["--vf-html", "out"],
     "--html: cannot write {cwd}/out: it is a folder",
     "--vf-html: cannot write {cwd}/out: it is a folder"),
    ("json-below-a-file", ["--junit-xml", "notes.txt/r.xml"], ["--junit-xml=notes.txt/r.xml"],
     "--junit-xml: cannot write {cwd}/notes.txt/r.xml: {cwd}/notes.txt is not a folder",
     "--junit-xml: cannot write {cwd}/notes.txt/r.xml: {cwd}/notes.txt is not a folder"),
    ("pyproject-type", ["+timeout = 'abc'"], ["+timeout = 'abc'"],
     "pyproject.toml: [tool.vfcheck] timeout: 'abc' is not a number of seconds > 0",
     "pyproject.toml: [tool.vfcheck] timeout: 'abc' is not a number of seconds > 0"),
    ("pyproject-unknown-key", ["+timout = 5"], ["+timout = 5"],
     "pyproject.toml: [tool.vfcheck]: unknown key 'timout' (did you mean 'timeout'?)",
     "pyproject.toml: [tool.vfcheck]: unknown key 'timout' (did you mean 'timeout'?)"),
    ("pyproject-flag", ["+golden_strict = 'yes'"], ["+golden_strict = 'yes'"],
     "pyproject.toml: [tool.vfcheck] golden_strict: 'yes' is not true or false",
     "pyproject.toml: [tool.vfcheck] golden_strict: 'yes' is not true or false"),
    ("environment", ["VFCHECK_ENVS_AT_ONCE=0"], ["VFCHECK_ENVS_AT_ONCE=0"],
     "environment variable VFCHECK_ENVS_AT_ONCE: '0' is not a whole number >= 1",
     "environment variable VFCHECK_ENVS_AT_ONCE: '0' is not a whole number >= 1"),
]
"""`+line` is a line of `[tool.vfcheck]`; `NAME=value` an environment variable."""


def arrange(cwd: Path, words: list[str]) -> tuple[list[str], dict[str, str]]:
    """The case's folder: command-line words, with pyproject.toml lines written and
    environment variables taken out."""
    (cwd / "out").mkdir(exist_ok=True)
    (cwd / "notes.txt").write_text("")
    lines = [w[1:] for w in words if w.startswith("+")]
    if lines:
        (cwd / "pyproject.toml").write_text("[tool.vfcheck]\n" + "\n".join(lines) + "\n")
    env = dict(w.split("=", 1) for w in words if w.startswith("VFCHECK_"))
    args = [w for w in words if not w.startswith("+") and not w.startswith("VFCHECK_")]
    return args, env


@pytest.mark.slow
@pytest.mark.parametrize("case", [c[0] for c in BAD])
def test_a_bad_value_is_one_line_before_any_work_in_vfcheck(tmp_path: Path, case: str) -> None:
    _, words, _, message, _ = next(c for c in BAD if c[0] == case)
    args, env = arrange(tmp_path, words)
    done = subprocess.run(
        [sys.executable, "-m", "vfcheck", "check", "vfc-echo", *args], cwd=tmp_path,
        capture_output=True, text=True, timeout=120, env={**os.environ, **env},
        stdin=subprocess.DEVNULL)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("vfcheck: error: " + message.format(cwd=tmp_path)), line
    assert done.stdout == ""  # no header: nothing started


@pytest.mark.slow
@pytest.mark.parametrize("case", [c[0] for c in BAD])
def test_a_bad_value_is_a_usage_error_of_the_plugin(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    _, _, words, _, message = next(c for c in BAD if c[0] == case)
    args, env = arrange(pytester.path, words)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = pytester.runpytest_subprocess("--vf-env", "vfc-echo", *args,
                                           "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR: ")]
    assert len(errors) == 1, result.stderr.str()
    assert errors[0].startswith("ERROR: vfcheck: " + message.format(cwd=pytester.path))
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
