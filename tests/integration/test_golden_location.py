"""Golden traces are read and written only in the project vfcheck was invoked in (the
pyproject.toml nearest the working directory), or in a golden folder the user named, never
where pytest's rootdir lands.

pytest computes its rootdir before it loads plugins, so the value of `--vf-path DIR` (two
words) looks like a test path to it: an existing DIR puts the rootdir, and once the golden
traces too, in the project around DIR. Each run here starts in a folder outside another
project whose envs it checks, records with `--snapshot-update`, and that project's files
must come out byte for byte as they were."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT

pytest_plugins = ["pytester"]


GOLDEN = ROOT / "golden"


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def other(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Another project: its own pyproject.toml, envs, script, wheel folder, and golden
    traces that an update would change (one stale, one unused)."""
    project = tmp_path_factory.mktemp("other-project")
    (project / "pyproject.toml").write_text('[project]\nname = "other"\n\n'
                                            '[tool.pytest.ini_options]\naddopts = "-ra"\n')
    (project / "envs").mkdir()
    shutil.copy(ROOT / "fixtures" / "vfc_echo.py", project / "envs" / "vfc_echo.py")
    shutil.copytree(GOLDEN / "vfc-echo", project / "golden" / "vfc-echo")
    stale = project / "golden" / "vfc-echo" / "vfc-echo_ping.json"
    stale.write_text(stale.read_text().replace('"seed": 0', '"seed": 1'))
    (project / "golden" / "vfc-echo" / "vfc-echo_retired.json").write_text("{}\n")
    (project / "script.toml").write_text("seed = 0\n")
    (project / "wheelhouse").mkdir()
    (project / "wheelhouse" / "README").write_text("no wheels needed on the fast tier\n")
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")  # no __pycache__ in its envs/ either
    return project


FORMS = {
    "two-words": lambda p: ["--vf-path", str(p / "envs")],
    "one-word": lambda p: [f"--vf-path={p / 'envs'}"],
    "every-path-option-two-words": lambda p: [
        "--vf-path", str(p / "envs"), "--vf-script", str(p / "script.toml"),
        "--vf-wheels", str(p / "wheelhouse")],
}


@pytest.mark.slow
@pytest.mark.parametrize("form", sorted(FORMS))
def test_an_update_from_outside_writes_here_and_leaves_the_other_project_alone(
    pytester: pytest.Pytester, other: Path, form: str
) -> None:
    before = tree(other)
    words = FORMS[form](other)
    run = pytester.runpytest_subprocess(
        "--vf-env", "vfc-echo", *words, "--vf-checks", "golden",
        "--snapshot-update", "-p", "no:cacheprovider", "-rA", timeout=600)
    assert run.ret == 0, run.stdout.str()[-3000:]
    # node ids are the env's name wherever pytest's rootdir went (not ../other/vfc-echo::...)
    assert "PASSED vfc-echo::golden[0]" in run.stdout.lines
    assert not [line for line in run.stdout.lines if "/vfc-echo::" in line]
    assert tree(other) == before
    recorded = tree(pytester.path / "golden")
    assert sorted(recorded) == ["vfc-echo/vfc-echo_hello_world.json",
                                "vfc-echo/vfc-echo_ping.json", "vfc-echo/vfc-echo_verifiers.json"]
    if "--vf-script" not in words:  # the default script: the committed traces, byte for byte
        assert recorded == {f"vfc-echo/{k}": v for k, v in tree(GOLDEN / "vfc-echo").items()}
    run.stdout.fnmatch_lines([f"golden traces: {pytester.path / 'golden'}/ (update)",
                              "vfc-echo golden traces: 3 recorded in golden/vfc-echo"])
    note = [line for line in run.stdout.lines if line.startswith("vfcheck: pytest's rootdir")]
    if form == "one-word":
        assert note == []
    else:  # pytest's rootdir moved; vfcheck says so, and how to keep it here
        assert len(note) == 1 and "Write --vf-path=" in note[0], run.stdout.str()[:3000]


@pytest.mark.slow
def test_a_golden_folder_linking_into_another_project_is_not_written_through(
    pytester: pytest.Pytester, other: Path
) -> None:
    (pytester.path / "pyproject.toml").write_text('[project]\nname = "here"\n')
    (pytester.path / "golden").mkdir()
    (pytester.path / "golden" / "vfc-echo").symlink_to(other / "golden" / "vfc-echo")
    before = tree(other)
    run = pytester.runpytest_subprocess(
        "--vf-env", "vfc-echo", f"--vf-path={other / 'envs'}", "--vf-checks", "golden",
        "--snapshot-update", "-p", "no:cacheprovider", "-rA", timeout=600)
    assert run.ret == 1
    target = other / "golden" / "vfc-echo"
    run.stdout.fnmatch_lines([f"*vfcheck will not write {target}/vfc-echo_ping.json: it is "
                              f"outside {pytester.path}, where this run may write golden "
                              "traces (to write there, name the folder: --vf-golden-dir DIR*"])
    assert tree(other) == before
    # the whole golden folder a link elsewhere: refused before any work starts
    shutil.rmtree(pytester.path / "golden")
    (pytester.path / "golden").symlink_to(other / "golden")
    done = subprocess.run(
        [sys.executable, "-m", "vfcheck", "check", "vfc-echo", "--path", str(other / "envs"),
         "--checks", "golden", "--golden-update"],
        cwd=pytester.path, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"vfcheck: error: --golden-update: vfcheck will not write {other / 'golden'}: it is "
        f"outside {pytester.path}, where this run may write golden traces (to write there, "
        "name the folder: --vf-golden-dir DIR, --golden-dir DIR or [tool.vfcheck] golden_dir)")
    assert tree(other) == before


@pytest.mark.slow
def test_a_golden_folder_named_explicitly_is_written_wherever_it_is(
    tmp_path: Path, other: Path
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "vfcheck", "check", "vfc-echo", "--path", str(other / "envs"),
         "--checks", "golden", "--golden-dir", str(other / "golden"), "--golden-update"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout[-3000:]
    assert f"golden traces: {other / 'golden'}/ (update)" in done.stdout
    assert tree(other / "golden" / "vfc-echo") == tree(GOLDEN / "vfc-echo")  # updated, cleaned
    assert not (tmp_path / "golden").exists()




@pytest.mark.slow
def test_from_the_wrong_folder_missing_golden_traces_are_said_loudly(
        tmp_path: Path, other: Path) -> None:
    """`cd .. && vfcheck check myenv`: the header shows the absolute golden folder, and a
    warning names it and the env's project, where its traces are; the closing line does not
    offer to record them here. In the project, a first run (nothing recorded) is quiet."""
    outside = other.parent
    done = subprocess.run(
        [sys.executable, "-m", "vfcheck", "check", "vfc-echo", "--path", str(other / "envs"),
         "--checks", "golden"], cwd=outside, capture_output=True, text=True, timeout=600,
        stdin=subprocess.DEVNULL, env={**os.environ, "COLUMNS": "400"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"golden traces: {outside / 'golden'}/ (compare)" in done.stdout.splitlines()
    assert (f"vfcheck: WARNING: none of vfc-echo's golden traces is in "
            f"{outside / 'golden' / 'vfc-echo'}, so nothing was compared; its project {other} "
            f"has them in {other / 'golden' / 'vfc-echo'}.") in done.stdout
    assert "next: run vfcheck where vfc-echo's golden traces are" in done.stdout
    shutil.rmtree(other / "golden")
    first = subprocess.run(
        [sys.executable, "-m", "vfcheck", "check", "vfc-echo", "--path", "envs", "--checks",
         "golden"], cwd=other, capture_output=True, text=True, timeout=600,
        stdin=subprocess.DEVNULL, env={**os.environ, "COLUMNS": "400"})
    assert first.returncode == 0, first.stdout[-3000:]
    assert "WARNING" not in first.stdout
    assert ("next: record 3 missing golden trace(s) of vfc-echo (when intended): vfcheck "
            "check vfc-echo --path envs --checks golden --golden-update") in first.stdout
