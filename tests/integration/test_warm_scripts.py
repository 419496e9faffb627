"""Warm harness programs (`python prog.py` in another environment's interpreter, forked by a
zygote of that interpreter: `vfcheck._host.warm_starts`): the child is what a cold start of
the same command would have been, and a zygote that cannot start means cold starts."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from vfcheck._host.processes import become_subreaper
from vfcheck._host.warm_starts import WARM

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="warm starts adopt children as a Linux subreaper")
PIPE = asyncio.subprocess.PIPE

PROGRAM = '''\
"""A harness program: what it reports of itself."""
import json, os, sys
import only_here
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    import never_there


def main():
    import importlib.util
    print(json.dumps({
        "session": [os.getpgid(0) == os.getpid(), os.getsid(0) == os.getpid()],
        "cwd": os.getcwd(), "asked": os.environ.get("ASKED"), "argv": sys.argv,
        "path0": sys.path[0], "file": __file__, "name": __name__, "doc": __doc__,
        "executable": sys.executable, "stdin": sys.stdin.read(),
        "only_here": only_here.WHERE,
        "psutil": importlib.util.find_spec("psutil") is not None,
        "activated": [os.environ.get(k) for k in ("VIRTUAL_ENV", "PATH", "PWD",
                                                  "UV_RUN_RECURSION_DEPTH")],
    }))
    print("to stderr", file=sys.stderr)
    if sys.argv[1:] == ["raise"]:
        raise ValueError("boom")
    sys.exit(3)


if __name__ == "__main__":
    main()
'''


@pytest.fixture(scope="module")
def harness_python(tmp_path_factory) -> str:
    """Another environment's interpreter (a uv script's, in verifiers' runtime), with a
    package only it has and none of vfcheck's."""
    venv = tmp_path_factory.mktemp("harness-env") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], capture_output=True, text=True, check=True)
    Path(site.stdout.strip(), "only_here.py").write_text("WHERE = __file__\n")
    return str(python)


@pytest.fixture
def scripts(tmp_path: Path):
    """This process with warm harness programs on (no tool servers' zygote)."""
    assert become_subreaper()
    WARM.reset()
    WARM.allow_scripts()
    yield
    WARM.close()
    WARM.reset()


async def play(python: str, script: Path, *args: str, cwd: Path,
               shell: tuple[str, ...] = ()) -> tuple[dict, str, int]:
    proc = await asyncio.create_subprocess_exec(
        *shell, python, str(script), *args, env={**os.environ, "ASKED": "yes"}, cwd=cwd,
        start_new_session=True, stdin=PIPE, stdout=PIPE, stderr=PIPE)
    out, err = await proc.communicate(b"from stdin")
    assert proc.returncode is not None
    return json.loads(out), err.decode(), proc.returncode


async def test_a_warm_harness_program_is_what_a_cold_one_would_be(
        scripts, harness_python: str, tmp_path: Path) -> None:
    program = tmp_path / "prog.py"
    program.write_text(PROGRAM)
    work = tmp_path / "work"
    work.mkdir()
    warm = [await play(harness_python, program, "arg", cwd=work) for _ in range(2)]
    assert WARM.counts == {"warm": 2}, (WARM.counts, WARM.reasons)
    assert len(WARM.scripts) == 1  # one zygote for the script's starts
    failed = await play(harness_python, program, "raise", cwd=work)
    WARM.off("cold, to compare")
    cold = await play(harness_python, program, "arg", cwd=work)
    cold_failed = await play(harness_python, program, "raise", cwd=work)
    assert WARM.counts == {"cold": 2}
    assert warm[0] == warm[1] == cold
    said, err, code = cold
    assert code == 3 and err == "to stderr\n" and said["session"] == [True, True]
    assert said["only_here"].startswith(str(Path(harness_python).parent.parent))
    assert said["psutil"] is False  # vfcheck's environment is not the program's
    assert (said["path0"], said["file"], said["argv"], said["name"], said["stdin"]) == (
        str(tmp_path), str(program), [str(program), "arg"], "__main__", "from stdin")
    assert failed[2] == cold_failed[2] == 1
    assert failed[1] == cold_failed[1]  # the same traceback, no frame of the zygote's
    assert failed[1].endswith("ValueError: boom\n") and "zygote" not in failed[1]


async def test_an_activated_harness_program_gets_the_environment_its_shell_gives(
        scripts, harness_python: str, tmp_path: Path) -> None:
    """verifiers' `prepare_uv_script(activate=True)` starts the program through a shell
    that sets VIRTUAL_ENV, PATH and two uv variables, then execs it; warm, the child gets
    what that shell gives (asked of the same shell), in each episode's own folder."""
    from vfcheck._host.warm_plan import ACTIVATE

    program = tmp_path / "prog.py"
    program.write_text(PROGRAM)
    venv = str(Path(harness_python).parent.parent)
    shell = ("sh", "-c", ACTIVATE, "uv-script", venv)
    folders = [tmp_path / f"episode-{i}" for i in range(2)]
    for folder in folders:
        folder.mkdir()
    warm = [await play(harness_python, program, "arg", cwd=f, shell=shell) for f in folders]
    assert WARM.counts == {"warm": 2}, (WARM.counts, WARM.reasons)
    assert len(WARM.scripts) == 1  # PWD differs, the zygote is the same
    WARM.off("cold, to compare")
    cold = [await play(harness_python, program, "arg", cwd=f, shell=shell) for f in folders]
    assert warm == cold
    said = cold[0][0]
    assert said["activated"][0] == venv and said["activated"][1].startswith(f"{venv}/bin:")
    assert said["activated"][2:] == [str(folders[0]), "1"] and said["cwd"] == str(folders[0])


async def test_another_environment_gets_a_zygote_of_its_own_up_to_two(
        scripts, harness_python: str, tmp_path: Path) -> None:
    """An import may read the environment, so a zygote serves one; a program started with
    a new one each time would cost a zygote per start, so the third starts cold."""
    program = tmp_path / "prog.py"
    program.write_text(PROGRAM)
    for asked in ("a", "b", "c", "a"):
        proc = await asyncio.create_subprocess_exec(
            harness_python, str(program), env={**os.environ, "ASKED": asked},
            start_new_session=True, stdin=PIPE, stdout=PIPE, stderr=PIPE)
        out, _ = await proc.communicate(b"")
        assert json.loads(out)["asked"] == asked
    assert WARM.counts == {"warm": 3, "cold": 1} and len(WARM.scripts) == 2
    assert list(WARM.reasons) == ["its environment differed in 2 earlier starts: a warm "
                                  "interpreter each would cost more than it saves"]


async def test_an_interpreter_whose_zygote_cannot_start_starts_cold(
        scripts, tmp_path: Path) -> None:
    """A `python` that cannot run vfcheck's zygote (here, not a Python at all): the start
    is cold, as it always was, and says why."""
    fake = tmp_path / "bin" / "python3"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho \"ran $1\"\n")
    fake.chmod(0o755)
    program = tmp_path / "prog.py"
    program.write_text("print('never')\n")
    proc = await asyncio.create_subprocess_exec(str(fake), str(program), stdout=PIPE,
                                                start_new_session=True)
    out, _ = await proc.communicate()
    assert out.decode() == f"ran {program}\n" and proc.returncode == 0
    assert WARM.counts == {"cold": 1}
    (why,) = WARM.reasons
    assert why.startswith("the harness program's warm interpreter is not usable")


async def test_harness_programs_start_cold_where_warm_starts_are_off(
        harness_python: str, tmp_path: Path) -> None:
    program = tmp_path / "prog.py"
    program.write_text(PROGRAM)
    WARM.off("warm starts are off (--cold-starts)")
    try:
        said, _, code = await play(harness_python, program, cwd=tmp_path)
    finally:
        counts, reasons = dict(WARM.counts), dict(WARM.reasons)
        WARM.reset()
    assert code == 3 and said["asked"] == "yes"
    assert counts == {"cold": 1} and reasons == {"warm starts are off (--cold-starts)": 1}


def test_a_harness_zygote_leaves_the_scripts_own_modules_to_its_children(tmp_path: Path):
    """The zygote's imports (`preload_script`) leave out a module beside the script: each
    child imports it from the file as it is then (it would shadow an installed one of the
    same name), and one installed nowhere fails in the child, as it would cold."""
    (tmp_path / "beside.py").write_text(f"open({str(tmp_path / 'imported')!r}, 'w')\n")
    (tmp_path / "prog.py").write_text("import beside\nimport fractions\nimport not_installed\n")
    code = ("import json, sys; from vfcheck._host.script_imports import preload_script;"
            f"failed = preload_script({str(tmp_path / 'prog.py')!r});"
            "print(json.dumps([failed, 'fractions' in sys.modules, 'beside' in sys.modules,"
            " sys.path[0]]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=tmp_path)
    failed, fractions, beside, path0 = json.loads(out.stdout)
    assert (failed, fractions, beside, path0) == ([], True, False, str(tmp_path))
    assert not (tmp_path / "imported").exists()
