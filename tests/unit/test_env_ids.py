"""Env ids before any load (`vfcheck._shared.env_ids`): a typo is a usage error naming the closest
id, from `[tool.vfcheck] envs` and the modules under `--path`; nothing is imported."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from vfcheck._options.resolved import resolve
from vfcheck._options.table import OptionError


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "envs").mkdir()
    (tmp_path / "envs" / "my_env.py").write_text("raise SystemExit('never imported')\n")
    (tmp_path / "envs" / "other_env").mkdir()
    (tmp_path / "envs" / "other_env" / "__init__.py").write_text("")
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "p"\n[tool.vfcheck]\nenvs = ["listed-env"]\n')
    return tmp_path


def test_a_typo_in_an_env_id_is_a_usage_error_naming_the_closest(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    with pytest.raises(OptionError) as bad:
        resolve(project, {"envs": ["my-evn"], "paths": ["envs"]}, find_envs=True)
    assert str(bad.value) == (
        "env 'my-evn': no module 'my_evn' in envs (an env id is its module's name with "
        "dashes); did you mean 'my-env'?")
    with pytest.raises(OptionError, match="did you mean 'listed-env'"):
        resolve(project, {"envs": ["listed-evn"], "paths": ["envs"]}, find_envs=True)


def test_ids_that_name_a_module_pass_without_importing_it(project: Path) -> None:
    found = resolve(project, {"envs": ["my-env", "other-env"], "paths": ["envs"]},
                    find_envs=True)
    assert found.run.envs == ["my-env", "other-env"]
    assert "my_env" not in sys.modules
    # the check is the check run's: other commands resolve options without it
    assert resolve(project, {"envs": ["my-evn"]}).run.envs == ["my-evn"]


def test_a_file_path_for_an_id_is_left_to_the_load_which_says_how_to_write_it(
        project: Path) -> None:
    from vfcheck._episodes.load_errors import id_hint

    found = resolve(project, {"envs": ["envs/my_env.py"]}, find_envs=True)  # no usage error
    assert found.run.envs == ["envs/my_env.py"]
    assert id_hint("envs/my_env.py") == (
        " ('envs/my_env.py' looks like a file path; an env id is its module's name with "
        "dashes: try `my-env --path envs`)")
    assert id_hint("my-env") == ""


def test_a_word_in_an_envs_source_is_found_without_importing_it(project: Path) -> None:
    from vfcheck._shared.env_ids import mentions

    envs = str(project / "envs")
    (project / "envs" / "tool_env.py").write_text(
        "raise SystemExit('never imported')\nclass T(vf.Toolset): ...\n")
    (project / "envs" / "other_env" / "tools.py").write_text("toolsets = []\n")
    assert mentions("tool-env", [envs], "toolset")
    assert mentions("other-env", [envs], "toolset")  # a package: its modules too
    assert not mentions("my-env", [envs], "toolset")
    assert not mentions("no-such-env", [envs], "toolset")
