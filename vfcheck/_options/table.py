"""The options of vfcheck's front ends, described once: `OPTIONS`.

From this one table come the argparse and pytest options, the `[tool.vfcheck]` reader, the check of
every value (`vfcheck._options.resolved.resolve`), the replay line, what travels to the check worker
and the options reference page (`readme_table`, held to docs/reference/options.md by a test).
Importing it is cheap (the plugin does at every pytest start): stdlib only.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vfcheck._options.option import (
    Front,
    GoldenFrom,
    Kind,
    Option,
    OptionError,
    PathRole,
    Scope,
    _text_of,
)

__all__ = ["BY_NAME", "OPTIONS", "Front", "GoldenFrom", "Kind", "Option", "OptionError",
           "PathRole", "Scope", "add_cli_options", "add_pytest_options", "cli_given",
           "readme_table", "where_given"]

if TYPE_CHECKING:
    import argparse

    import pytest

def _load_script(path: Path) -> None:
    """A script file must parse: its ScriptError names the file, the task and the turn."""
    from vfcheck._model.script import Script

    Script.load(path)


EPISODES = ("run", "record")
"""The subcommands that play episodes (against the mock, or an endpoint)."""

OPTIONS: tuple[Option, ...] = (
    Option("envs", "text", "env ids to check", default=[], key="envs", repeat=True,
           given_replaces=True, positional=True, metavar="ENV", pytest="--vf-env",
           scope="run"),
    Option("env_args", "pairs",
           "env config value: dotted keys address the env config, bare keys the taskset "
           "(num_tasks=5); VALUE is JSON when it parses",
           default={}, key="env_args", cli=("--env-arg",), pytest="--vf-env-arg",
           commands=("check", "run", "record", "wheels"), metavar="KEY=VALUE", repeat=True),
    Option("paths", "path", "folder holding env modules, put on sys.path and PYTHONPATH",
           default=[], key="paths", cli=("--path",), pytest="--vf-path",
           commands=("check", "run", "record", "wheels"), metavar="DIR", repeat=True, path="dir"),
    Option("num_tasks", "int", "tasks to load", shown_default="all (of an infinite taskset: "
           "the sample)", key="num_tasks", cli=("-n", "--num-tasks"), pytest="--vf-num-tasks",
           commands=("check", "run", "record"), metavar="N", minimum=1),
    Option("families", "list", "check families to run, comma-separated (exact names; load "
           "always runs)", shown_default="all", key="checks", key_aliases=("families",),
           cli=("--checks",), pytest="--vf-checks", metavar="A,B"),
    Option("sample", "int", "tasks sampled by the episode families", default=3, key="sample",
           cli=("--sample",), pytest="--vf-sample", metavar="K", minimum=1),
    Option("timeout", "float", "timeout per check, seconds", default=60.0, key="timeout",
           cli=("--timeout",), pytest="--vf-timeout", metavar="S", above=0, unit="seconds"),
    Option("load_timeout", "float", "deadline for loading the env (its import and "
           "`load()`), seconds", default=None, shown_default="the longer of --timeout and 60",
           key="load_timeout", cli=("--load-timeout",), pytest="--vf-load-timeout",
           metavar="S", above=0, unit="seconds"),
    Option("harness", "choice", "harness tier: the env's own harness, or vfcheck's "
           "in-process chat loop where it applies", default="fast", key="harness",
           cli=("--harness",), pytest="--vf-harness", commands=("check", "run", "record"),
           choices=("env", "fast")),
    Option("script", "path", "the user's script file (TOML)", shown_default="the default "
           "policy", key="script", cli=("--script",), pytest="--vf-script",
           commands=("check", "run", "mock-server"), metavar="FILE", path="file",
           load=_load_script),
    Option("seed", "int", "seed of the default script", shown_default="the script file's, "
           "else 0", key="seed", cli=("--seed",), pytest="--vf-seed",
           commands=("check", "run", "mock-server"), metavar="N"),
    Option("golden_dir", "path", "where golden traces live", default="",
           shown_default="`golden/` beside the pyproject.toml nearest the working directory",
           key="golden_dir",
           cli=("--golden-dir",), pytest="--vf-golden-dir", metavar="DIR", path="golden"),
    Option("golden_update", "flag", "write golden traces (and remove unused ones)",
           default=False, shown_default="off", cli=("--golden-update",),
           pytest="--snapshot-update", pytest_owner="syrupy", pytest_dest="update_snapshots",
           replay=False),
    Option("golden_strict", "flag", "a missing or unused golden trace fails (CI, once "
           "recorded)", default=False, shown_default="off", key="golden_strict",
           cli=("--golden-strict",), pytest="--vf-golden-strict"),
    Option("allow", "allows", "accept a known finding: a failed finding whose name "
           "(`check`, `check[task]`, `env::check[task]`; fnmatch patterns) matches becomes "
           "`expected` (pytest: xfail), showing the reason", default={}, shown_default="none",
           key="allow", cli=("--allow",), pytest="--vf-allow", metavar="PATTERN[=REASON]",
           repeat=True, replay=False),
    Option("reward_max", "float", "the reward's maximum: without a reference answer, an "
           "`exploit.*` probe that reaches it fails", default=None,
           shown_default="the sum of the env's reward weights, else 1", key="reward_max",
           cli=("--reward-max",), pytest="--vf-reward-max", metavar="R", above=0),
    Option("fuzz_examples", "int", "replies the `fuzz` family, and `exploit.search`, play per "
           "sampled task while they search (shrinking a failure may play twice as many more)",
           default=12,
           key="fuzz_examples", cli=("--fuzz-examples",), pytest="--vf-fuzz-examples",
           metavar="N", minimum=1),
    Option("group_size", "int", "episodes of one task the `concurrency` family plays at once "
           "(a group of rollouts, as a trainer plays them), each compared with the same "
           "episode played one at a time", default=4, key="group_size",
           cli=("--group-size",), pytest="--vf-group-size", metavar="G", minimum=2),
    Option("soak_episodes", "int", "episodes of one sampled task `soak.memory` plays (the "
           "first fifth warm up, untraced; the rest in two stretches, of two episodes each when "
           "each episode starts a tool server or a harness program)", default=12,
           key="soak_episodes",
           cli=("--soak-episodes",), pytest="--vf-soak-episodes", metavar="N", minimum=5),
    Option("soak_growth", "int", "bytes per episode env code may keep from episode to episode "
           "before `soak.memory` fails", default=1024, key="soak_growth",
           cli=("--soak-growth",), pytest="--vf-soak-growth", metavar="BYTES", minimum=0),
    Option("pool_workers", "int", "env-server worker processes `served.pool` plays each sampled "
           "task through, as a trainer's pool (2 or more for a pool as trainers run it; each "
           "worker is an interpreter that imports verifiers and the env, ~5 s of CPU)",
           default=0, shown_default="0: `served.pool` is skipped", key="pool_workers",
           cli=("--pool-workers",), pytest="--vf-pool-workers", metavar="N", minimum=0),
    Option("wheels", "path", "folder of wheels the harness programs resolve their "
           "dependencies from, with no package index (fill it with: vfcheck wheels DIR ENV)",
           shown_default="the index", key="wheels", cli=("--wheels",), pytest="--vf-wheels",
           commands=("check", "run", "record"), metavar="DIR", path="dir",
           missing="the wheel folder {path} does not exist (fill it with: vfcheck wheels "
                   "{path})"),
    Option("cold_starts", "flag", "start every process verifiers asks for as a fresh "
           "interpreter: no warm starts (forks of a warm interpreter that already imported "
           "verifiers, for its tool servers; see docs/warm-starts.md)", default=False,
           shown_default="off: warm starts", key="cold_starts", cli=("--cold-starts",),
           pytest="--vf-cold-starts", commands=("check", "run"), env="VFCHECK_COLD_STARTS"),
    Option("json", "path", "write the JSON report", cli=("--json",), pytest="--vf-json",
           commands=("check", "library", "merge"), metavar="FILE", path="output",
           scope="run"),
    Option("junit_xml", "path", "write JUnit XML", cli=("--junit-xml",),
           pytest="--junit-xml", pytest_owner="pytest", pytest_dest="xmlpath",
           commands=("check", "library", "merge"), metavar="FILE", path="output",
           scope="run"),
    Option("shard", "shard", "check only shard K of N: the sorted env ids, every N-th from "
           "the K-th, the same on every machine (CI matrices; join the reports with "
           "`vfcheck merge`). A shard left with no env passes, saying so", cli=("--shard",),
           pytest="--vf-shard", metavar="K/N", scope="run"),
    Option("html", "path", "write the HTML report: one self-contained file (the outcome "
           "matrix, episodes, notify timelines, golden diffs, reward probes)",
           cli=("--html",), pytest="--vf-html", commands=("check", "library"),
           metavar="FILE", path="output", scope="run"),
    Option("verbose", "flag", "print every finding's row, not only failures and errors "
           "(pytest: its own `-v`)", default=False, shown_default="off",
           cli=("-v", "--verbose"), commands=("check", "library"), scope="run"),
    Option("from_validate", "path", "grade an existing vf-validate run directory instead",
           cli=("--from-validate",), metavar="RUN_DIR", scope="run"),
    Option("only", "text", "run only these items, e.g. 'gold[1]' or 'lifecycle'", default=[],
           pytest="--vf-only", commands=(), metavar="ITEM", repeat=True, scope="run"),
    Option("library", "flag", "check the installed verifiers against the contracts vfcheck "
           "relies on (`vfcheck library`)", default=False, shown_default="off",
           pytest="--vf-library", commands=(), scope="run"),
    Option("no_baseline", "flag", "library suite: report known behaviours of this verifiers "
           "as failed, not expected", default=False, shown_default="off", cli=("--no-baseline",),
           pytest="--vf-no-baseline", commands=("library",), scope="run"),
    Option("envs_at_once", "int", "env workers running at once in one front end (the "
           "others queue)", shown_default="one per free core (the header says)",
           key="envs_at_once", cli=("--envs-at-once",), pytest="--vf-envs-at-once",
           env="VFCHECK_ENVS_AT_ONCE", metavar="N", minimum=1, scope="run"),
    Option("episodes_at_once", "int", "episodes in flight in each env worker (chat "
           "episodes, and those that start a tool server or harness program)", shown_default=
           "sized to the free cores and memory (the header says)", key="episodes_at_once",
           cli=("--episodes-at-once",), pytest="--vf-episodes-at-once",
           env="VFCHECK_EPISODES_AT_ONCE", metavar="N", minimum=1, scope="run"),
    Option("spread", "choice", "who checks the envs under `pytest -n N --dist loadscope`: "
           "`workers`, each env on the xdist worker that runs its items; `controller`, this "
           "process, each env once, the workers reporting its findings; `auto`, `workers` "
           "when a worker is on another machine (`--tx ssh=...`), else `controller`, since "
           "workers on this machine share its cores and would load each env twice",
           default="auto", key="spread", pytest="--vf-spread", commands=(),
           choices=("auto", "workers", "controller"), scope="run"),
    Option("rollouts", "int", "episodes per task", default=1, cli=("-r", "--rollouts"),
           commands=("run",), metavar="N", minimum=1, scope="episodes"),
    Option("concurrency", "int", "episodes at once", default=4,
           cli=("-c", "--concurrency"), commands=EPISODES, metavar="C", minimum=1,
           scope="episodes"),
    Option("base_url", "text", "an OpenAI-compatible endpoint: `run` plays against it "
           "instead of the mock, `record` records it", cli=("--base-url",),
           commands=EPISODES, required_for=("record",), metavar="URL", scope="episodes"),
    Option("api_key_var", "text", "env var holding the endpoint's API key (an endpoint on "
           "this machine may do without)", default="OPENAI_API_KEY", cli=("--api-key-var",),
           commands=EPISODES, metavar="VAR", scope="episodes"),
    Option("model", "text", "model name sent upstream", shown_default="vfcheck-scripted for "
           "vfcheck's mock, else gpt-4.1-mini", cli=("--model",), commands=EPISODES,
           metavar="NAME", scope="episodes"),
    Option("episode_timeout", "float", "deadline per episode, seconds", default=300.0,
           cli=("--timeout",), commands=EPISODES, metavar="S", minimum=0.1,
           unit="seconds", scope="episodes"),
    Option("output", "path", "`run`: the episodes' JSONL; `record`: the cassette to write "
           "(a script file, TOML)", shown_default="run: vfcheck-runs/<env>/episodes.jsonl",
           cli=("-o", "--output"), commands=EPISODES, required_for=("record",),
           metavar="FILE", path="output", scope="episodes"),
    Option("port", "int", "port of `vfcheck mock-server` on 127.0.0.1 (0: a free one)",
           default=8000, cli=("--port",), commands=("mock-server",), metavar="PORT",
           minimum=0, maximum=65535, scope="episodes"),
)
BY_NAME = {option.name: option for option in OPTIONS}


# -- the front ends' flags


def add_cli_options(parser: argparse.ArgumentParser, command: str) -> None:
    """The table's options of the `vfcheck <command>` subcommand."""
    for option in OPTIONS:
        if command not in option.commands or not (option.cli or option.positional):
            continue
        if option.positional:
            parser.add_argument(option.name, nargs="*", metavar=option.metavar,
                                help=option.help_text())
        else:
            kwargs = option.argparse_kwargs()
            if command in option.required_for:
                kwargs["required"] = True
            parser.add_argument(*option.cli, dest=option.name, **kwargs)


def cli_given(args: argparse.Namespace, command: str) -> dict[str, Any]:
    """What the command line gave for the subcommand's options (None: not given)."""
    return {option.name: getattr(args, option.name, None) for option in OPTIONS
            if command in option.commands}


def add_pytest_options(group: pytest.OptionGroup) -> None:
    """The table's `--vf-*` options (flags of pytest and syrupy are theirs)."""
    for option in OPTIONS:
        if option.pytest is not None and option.pytest_owner is None:
            group.addoption(option.pytest, **option.argparse_kwargs())



def where_given(option: Option, front: Front) -> str:
    """How a message names the command-line flag of `option`."""
    return (option.pytest or option.name) if front == "pytest" else (
        "/".join(option.cli) or (option.metavar if option.positional else None)
        or option.name.upper())


# -- the README's table


def readme_table() -> str:
    """The option table of docs/reference/options.md (a test holds them equal)."""

    def flags(words: Sequence[str], option: Option, owner: str | None = None) -> str:
        if not words:
            return ""
        value = "" if option.kind == "flag" else f" {option.metavar or '|'.join(option.choices)}"
        text = f"`{', '.join(words)}{value}`".replace("|", "\\|")
        return text + (f" ({owner}'s)" if owner else "")

    rows = ["| pytest | `vfcheck check` | `[tool.vfcheck]` | meaning | default |",
            "|---|---|---|---|---|"]
    for option in OPTIONS:
        pytest_cell = flags([option.pytest] if option.pytest else [], option,
                            option.pytest_owner)
        if option.positional:
            cli_cell = f"`{option.metavar}...` (positional)"
        else:
            cli_cell = flags(option.cli, option)
            if option.cli and "check" not in option.commands:
                cli_cell += f" (`vfcheck {option.commands[0]}`)"
        key = (f"`{option.key}`" if option.key else
               f"`{option.env}` (environment)" if option.env else "")
        default = option.shown_default or (
            "" if option.default in (None, [], {}) else _text_of(option.default))
        rows.append(f"| {pytest_cell} | {cli_cell} | {key} | {option.help} | {default} |")
    return "\n".join(rows) + "\n"
