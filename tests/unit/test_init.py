"""`vfcheck init` (`vfcheck._frontends.scaffold`) on package folders made here: idempotent, never
overwriting what the user wrote, one-line refusals."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from vfcheck._frontends.scaffold import WORKFLOW, WORKFLOW_PATH, InitError, init_package, plan_init
from vfcheck._options.resolved import resolve

USER_PYPROJECT = """\
[project]
name = "vfc-echo"   # the env's id
version = "0.1.0"

[tool.vfcheck]  # the user's own settings
sample = 2      # kept, as is this comment

[tool.vfcheck.allow]
"vfc-echo::exploit.echo-prompt" = "an echo task shows its answer on purpose"
"vfc-echo::exploit.answer-spam" = "a lenient substring reward, on purpose"

[tool.other]
x = 1
"""


def package(tmp_path: Path, pyproject: str = USER_PYPROJECT, module: str | None = "vfc_echo",
            folder: str = ".") -> Path:
    root = tmp_path / "pkg"
    (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(pyproject)
    if module is not None:
        (root / folder / f"{module}.py").write_text("# the env\n")
    return root


def test_the_keys_go_into_the_users_table_and_nothing_else_changes(
    tmp_path: Path,
) -> None:
    root = package(tmp_path)
    made = plan_init(root, [], [], lambda: root / "golden")
    assert made.envs == ["vfc-echo"] and made.paths == ["."]
    assert made.notes == ["env 'vfc-echo': the project's name (name others: vfcheck init ENV...)"]
    assert made.pyproject_text == USER_PYPROJECT.replace(
        "sample = 2      # kept, as is this comment\n",
        'sample = 2      # kept, as is this comment\nenvs = ["vfc-echo"]\npaths = ["."]\n')
    assert made.workflow and made.record == ["vfc-echo"]


def test_a_new_table_is_appended_and_the_module_folder_found(tmp_path: Path) -> None:
    root = package(tmp_path, '[project]\nname = "pkg"\n', module="my_env", folder="src")
    made = plan_init(root, ["owner/my-env@1.0"], [], lambda: root / "golden")
    assert made.pyproject_text == (
        '[project]\nname = "pkg"\n\n[tool.vfcheck]\nenvs = ["owner/my-env@1.0"]\n'
        'paths = ["src"]\n')
    given = plan_init(root, ["my-env"], [str(root / "src")], lambda: root / "golden")
    assert given.paths == ["src"]  # a path inside the package is written relative to it
    installed = package(tmp_path / "b", '[project]\nname = "pkg"\n', module=None)
    made = plan_init(installed, ["my-env"], [], lambda: installed / "golden")
    assert made.paths == []  # an installed module needs no path
    assert tomllib.loads(made.pyproject_text or "")["tool"]["vfcheck"] == {"envs": ["my-env"]}


def test_a_key_with_another_value_is_refused(tmp_path: Path) -> None:
    root = package(tmp_path, '[tool.vfcheck]\nenvs = ["mine"]\npaths = ["envs"]\n')
    with pytest.raises(InitError, match=r"^pyproject.toml: \[tool.vfcheck\] envs = \[\"mine\"\] "
                       r"already, not \[\"vfc-echo\"\]: init does not overwrite it") as refused:
        plan_init(root, ["vfc-echo"], [], lambda: root / "golden")
    assert not refused.value.usage
    with pytest.raises(InitError, match=r"paths = \[\"envs\"\] already, not \[\"other\"\]"):
        plan_init(root, ["mine"], ["other"], lambda: root / "golden")
    kept = plan_init(root, [], [], lambda: root / "golden")  # its own settings: nothing to add
    assert kept.envs == ["mine"] and kept.pyproject_text is None


def test_a_different_workflow_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    root = package(tmp_path)
    workflow = root / WORKFLOW_PATH
    workflow.parent.mkdir(parents=True)
    workflow.write_text("name: mine\n")
    with pytest.raises(InitError, match=r"vfcheck.yml exists and is not vfcheck init's"):
        plan_init(root, [], [], lambda: root / "golden")
    assert (root / "pyproject.toml").read_text() == USER_PYPROJECT
    assert workflow.read_text() == "name: mine\n"


def test_a_table_of_dotted_keys_gets_dotted_keys(tmp_path: Path) -> None:
    """A `tool.vfcheck` made by dotted keys keeps its style (tomlkit writes it)."""
    root = package(tmp_path, '[tool]\nvfcheck.sample = 2\n')
    made = plan_init(root, ["vfc-echo"], [], lambda: root / "golden")
    assert made.pyproject_text == (
        '[tool]\nvfcheck.sample = 2\nvfcheck.envs = ["vfc-echo"]\nvfcheck.paths = ["."]\n')


def test_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(InitError, match=r"no pyproject\.toml in") as missing:
        plan_init(tmp_path, ["e"], [], lambda: tmp_path / "golden")
    assert missing.value.usage
    root = package(tmp_path, "[tool.x]\n")
    with pytest.raises(InitError, match=r"^name the env\(s\): vfcheck init ENV"):
        plan_init(root, [], [], lambda: root / "golden")


def test_golden_traces_that_exist_are_kept(tmp_path: Path) -> None:
    root = package(tmp_path)
    (root / "golden" / "vfc-echo").mkdir(parents=True)
    (root / "golden" / "vfc-echo" / "a.json").write_text("{}")
    made = plan_init(root, [], [], lambda: root / "golden")
    assert made.record == [] and made.kept == ["vfc-echo"]
    said: list[str] = []
    assert init_package(made, echo=said.append)
    assert (root / WORKFLOW_PATH).read_text() == WORKFLOW
    assert "golden/vfc-echo: golden traces exist, kept" in said[-1]


def test_pyproject_envs_are_checked_unless_envs_are_named(tmp_path: Path) -> None:
    root = package(tmp_path, '[tool.vfcheck]\nenvs = ["a", "b"]\n')
    assert resolve(root).run.envs == ["a", "b"]
    assert resolve(root, {"envs": ["c"]}).run.envs == ["c"]


def test_the_workflow_installs_vfcheck_from_where_ci_can_get_it(tmp_path: Path) -> None:
    """`--install`: the package index, a git URL, a path in the package; by default how
    this vfcheck was installed, if CI can reach it (here: an editable install from a folder
    outside the package, so the index, saying why)."""
    from vfcheck import __version__
    from vfcheck._frontends.scaffold import install_of, workflow_text

    root = package(tmp_path)
    assert install_of(root, "index").requirement == f"vfcheck=={__version__}"
    git = install_of(root, "git+https://github.com/me/vfcheck@v0.1.0")
    assert (git.requirement, git.source) == (
        "'vfcheck @ git+https://github.com/me/vfcheck@v0.1.0'", "a git URL")
    assert "run: pip install -e . 'vfcheck @ git+https://github.com/me/vfcheck@v0.1.0'" in (
        workflow_text(git))
    (root / "vendor").mkdir()
    (root / "vendor" / "vfcheck-0.1.0-py3-none-any.whl").write_text("")
    wheel = install_of(root, "vendor/vfcheck-0.1.0-py3-none-any.whl")
    assert (wheel.requirement, wheel.source) == (
        "./vendor/vfcheck-0.1.0-py3-none-any.whl", "a path in the package")
    with pytest.raises(InitError, match="is outside the package, where CI cannot reach it"):
        install_of(root, str(tmp_path))
    detected = install_of(root, None)
    assert detected.source == "the package index" and "which CI cannot reach" in detected.note

    made = plan_init(root, [], [], lambda: root / "golden", install="git+https://h/v.git")
    said: list[str] = []
    made.record = []  # no golden traces recorded here: that runs vfcheck check
    init_package(made, echo=said.append)
    assert any(line.startswith(".github/workflows/vfcheck.yml: written") and
               "installs vfcheck from a git URL: pip install -e . 'vfcheck @ "
               "git+https://h/v.git'" in line for line in said)
