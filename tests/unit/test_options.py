"""The option table (`vfcheck._options.table.OPTIONS`): its rendering, and every option's round
trip CLI -> CheckOptions -> replay line, parsed in-process."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest
from support import DOCS

from vfcheck._frontends.cli import build_parser
from vfcheck._options.resolved import (
    CheckOptions,
    EpisodeOptions,
    RunOptions,
    resolve,
    resolve_options,
)
from vfcheck._options.table import OPTIONS, OptionError, cli_given, readme_table

SAMPLES: dict[str, list[str]] = {
    "env_args": ["a.b=5", 'name="null"', "text=plain", "xs=[1, 2]", "flag=true"],
    "paths": ["envs", "more-envs"],
    "num_tasks": ["2"],
    "families": ["gold,noop"],
    "sample": ["1"],
    "timeout": ["2.5"],
    "load_timeout": ["30"],
    "harness": ["env"],
    "script": ["script.toml"],
    "seed": ["7"],
    "golden_dir": ["my-golden"],
    "golden_strict": [],
    "cold_starts": [],
    "wheels": ["wheelhouse"],
    "reward_max": ["2"],
    "fuzz_examples": ["5"],
    "group_size": ["3"],
    "soak_episodes": ["8"],
    "soak_growth": ["4096"],
    "pool_workers": ["3"],
}
"""A value other than the default for every option a replay line repeats (a flag: none)."""


REPLAYED = [o for o in OPTIONS if o.scope == "check" and o.replay]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory where every sample path exists."""
    for folder in ("envs", "more-envs", "wheelhouse"):
        (tmp_path / folder).mkdir()
    (tmp_path / "script.toml").write_text("seed = 4\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def words_for(names: list[str], front: str) -> list[str]:
    words: list[str] = []
    for option in REPLAYED:
        if option.name not in names:
            continue
        flag = option.flag_for("pytest" if front == "pytest" else "cli")
        assert flag is not None
        values = SAMPLES[option.name]
        words += [flag] if option.kind == "flag" else [w for v in values for w in (flag, v)]
    return words


def from_cli(words: list[str], cwd: Path) -> CheckOptions:
    args = build_parser().parse_args(["check", "some-env", *words])
    return resolve(cwd, cli_given(args, "check"), front="cli").check


def test_the_options_reference_page_is_the_option_table() -> None:
    page = (DOCS / "reference" / "options.md").read_text()
    start, end = "<!-- options:start -->", "<!-- options:end -->"
    assert start in page and end in page, "docs/reference/options.md lost its markers"
    block = page.split(start, 1)[1].split(end, 1)[0].strip()
    assert block == readme_table().strip(), (
        "docs/reference/options.md drifted from the option table; between its markers it "
        "should hold:\n" + readme_table())


def test_the_dataclasses_have_one_field_per_option() -> None:
    internal = {"golden_dir_from", "project_dir", "allow_from"}
    assert {f.name for f in fields(CheckOptions)} - internal == {
        o.name for o in OPTIONS if o.scope == "check"}
    assert {f.name for f in fields(RunOptions)} == {o.name for o in OPTIONS if o.scope == "run"}
    assert {f.name for f in fields(EpisodeOptions)} == {
        o.name for o in OPTIONS if o.scope == "episodes"}
    assert set(SAMPLES) == {o.name for o in REPLAYED}, "a new option needs a sample value"


@pytest.mark.parametrize("name", [o.name for o in REPLAYED])
def test_every_option_round_trips_through_the_cli_replay_line(project: Path, name: str) -> None:
    default = CheckOptions(project_dir=str(project))
    options = from_cli(words_for([name], "cli"), project)
    assert getattr(options, name) != getattr(default, name), "the sample is not the default"
    again = from_cli(options.replay_args(pytest=False), project)
    assert again == options


def test_all_options_at_once_round_trip_through_both_front_ends(
    project: Path, pytester: pytest.Pytester
) -> None:
    from vfcheck._frontends.pytest_session import resolved_from_config

    names = list(SAMPLES)
    cli = from_cli(words_for(names, "cli"), project)
    assert from_cli(cli.replay_args(pytest=False), project) == cli
    pytester.chdir()
    for folder in ("envs", "more-envs", "wheelhouse"):
        (pytester.path / folder).mkdir()
    (pytester.path / "script.toml").write_text("seed = 4\n")
    plugin = resolved_from_config(pytester.parseconfig(*words_for(names, "pytest"))).check
    assert plugin == from_cli(words_for(names, "cli"), pytester.path)
    replayed = plugin.replay_args(pytest=True)
    assert resolved_from_config(pytester.parseconfig(*replayed)).check == plugin
    # the replay lines of both front ends say the same, flag for flag; paths for pytest are
    # one word (--vf-path=DIR): pytest would take a second word for a test path
    path_flags = {o.pytest for o in OPTIONS if o.kind == "path"}
    split = [part for w in replayed for part in (
        w.split("=", 1) if w.split("=", 1)[0] in path_flags else [w])]
    assert len(split) > len(replayed)
    assert [w.removeprefix("--vf-") for w in split] == [
        w.removeprefix("--") for w in plugin.replay_args(pytest=False)]


def test_precedence_and_relative_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command line wins over pyproject.toml; lists put the command line's first; paths
    in pyproject.toml are relative to it, on the command line to the working directory."""
    (tmp_path / "envs").mkdir()
    (tmp_path / "sub" / "local").mkdir(parents=True)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.vfcheck]\npaths = ["envs"]\nsample = 2\ntimeout = 5\nnum-tasks = 4\n'
        'env_args = { a = 1, b = "x" }\n')
    monkeypatch.chdir(tmp_path / "sub")
    options = resolve_options(tmp_path / "sub", {"paths": ["local"], "timeout": "9",
                                                 "env_args": ["b=2"]})
    assert options.paths == [str(tmp_path / "sub" / "local"), str(tmp_path / "envs")]
    assert (options.sample, options.timeout, options.num_tasks) == (2, 9.0, 4)
    assert options.env_args == {"a": 1, "b": 2}
    assert options.golden_dir == str(tmp_path / "golden")
    assert options.project_dir == str(tmp_path)
    assert options.replay_args(pytest=False)[:4] == [
        "--env-arg", "a=1", "--env-arg", "b=2"]


def test_environment_values_are_checked(tmp_path: Path) -> None:
    run = resolve(tmp_path, environ={"VFCHECK_ENVS_AT_ONCE": "3"}).run
    assert run.envs_at_once == 3
    with pytest.raises(OptionError, match=r"^environment variable VFCHECK_ENVS_AT_ONCE: 'x' "):
        resolve(tmp_path, environ={"VFCHECK_ENVS_AT_ONCE": "x"})


def test_run_record_and_mock_server_flags_come_from_the_option_table() -> None:
    """One option system: `vfcheck run`/`record`/`mock-server` flags, defaults and bounds
    are the table's (no second argparse definition with its own defaults)."""
    from vfcheck._frontends.cli import build_parser
    from vfcheck._options.table import BY_NAME

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for command, names in (("run", ["rollouts", "concurrency", "episode_timeout", "output"]),
                           ("record", ["base_url", "api_key_var", "model", "output"]),
                           ("mock-server", ["port"])):
        flags = {a.dest: a for a in sub.choices[command]._actions}  # type: ignore[attr-defined]
        for name in names:
            assert flags[name].option_strings == list(BY_NAME[name].cli)
            assert flags[name].default is None  # resolve() fills in the table's default
    given = cli_given(parser.parse_args(["mock-server"]), "mock-server")
    assert resolve(Path.cwd(), given).episodes.port == BY_NAME["port"].default == 8000
    with pytest.raises(OptionError, match=r"--port: '70000' is not a whole number >= 0 and "
                       r"<= 65535"):
        resolve(Path.cwd(), cli_given(parser.parse_args(["mock-server", "--port", "70000"]),
                                      "mock-server"))
