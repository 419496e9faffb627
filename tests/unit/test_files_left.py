"""`vfcheck._host.files_left`: which files env code left, named as shown and by who made
them; the audit hook notes creations by env code only, and only while watching."""

from __future__ import annotations

import inspect
import os
import tempfile
from pathlib import Path

from vfcheck._host.files_left import FileWrites, Made, private_tempdir


def writes_in(workdir: Path, system: Path) -> FileWrites:
    writes = FileWrites()
    writes.private, writes.home = str(workdir / "tmp"), str(workdir)
    writes.temp_roots = (str(system),)
    (workdir / "tmp").mkdir(parents=True)
    return writes


def test_what_is_left_under_the_temp_dirs_and_home_is_named_once_with_its_maker(
    tmp_path: Path,
) -> None:
    workdir, system, elsewhere = tmp_path / "work", tmp_path / "system", tmp_path / "project"
    for folder in (system, elsewhere):
        folder.mkdir()
    writes = writes_in(workdir, system)
    setup = Made("VfcTask.setup", 1, "my_env.py:30")
    scratch = system / "scratch.txt"
    scratch.write_text("x")
    folder = workdir / "tmp" / "run"
    (folder / "a").mkdir(parents=True)
    (folder / "a" / "b.txt").write_text("x")
    runtime = workdir / ".cache" / "verifiers" / "runtimes" / "x.txt"
    runtime.parent.mkdir(parents=True)
    runtime.write_text("x")
    for path in (scratch, folder, folder / "a" / "b.txt", runtime, elsewhere / "out.json",
                 system / "removed.txt", workdir / "notes.txt"):
        writes.made[str(path)] = setup
    (workdir / "notes.txt").write_text("x")
    (elsewhere / "out.json").write_text("{}")
    (workdir / "tmp" / "by-a-child").write_text("x")  # nobody in the worker noted it
    (workdir / "tmp" / "uv-1234.lock").write_text("")  # uv's, for the harness programs
    left = {f.path: f for f in writes.left()}
    assert set(left) == {"<temp dir>/by-a-child", "<temp dir>/run", f"{system}/scratch.txt",
                         "~/notes.txt"}
    assert left["<temp dir>/run"].entries == 2 and left["<temp dir>/run"].made == setup
    assert left["<temp dir>/by-a-child"].made == Made()
    assert left[f"{system}/scratch.txt"].made == setup


def test_the_audit_hook_notes_what_env_code_creates_while_watching(tmp_path: Path) -> None:
    """This test module is env code to `CRASH_SITES` (outside vfcheck, the standard library
    and site-packages); a read, a bytecode cache and anything after `stop()` are not
    noted."""
    writes = FileWrites()
    writes.watch()
    try:
        line = inspect.stack()[0].lineno + 1
        (tmp_path / "made.txt").write_text("x")
        os.mkdir(tmp_path / "dir")
        os.mkdir(tmp_path / "__pycache__")  # what an import in a hook writes: not noted
        (tmp_path / "made.txt").read_text()
    finally:
        writes.stop()
    (tmp_path / "later.txt").write_text("x")
    made = writes.made[str(tmp_path / "made.txt")]
    assert made.hook == "env code (test_the_audit_hook_notes_what_env_code_creates_while_watching)"
    assert made.at is not None and made.at.endswith(f"test_files_left.py:{line}")
    assert sorted(writes.made) == [str(tmp_path / "dir"), str(tmp_path / "made.txt")]


def test_the_private_temp_dir_is_tempfiles_choice_inside_and_only_inside(tmp_path: Path) -> None:
    before = tempfile.gettempdir()
    with private_tempdir(tmp_path) as folder:
        assert tempfile.gettempdir() == str(folder) == os.environ["TMPDIR"]
        assert folder == tmp_path / "tmp" and folder.is_dir()
    assert tempfile.gettempdir() == before


def test_what_a_library_writes_while_env_code_is_on_the_stack_is_not_the_envs(
        tmp_path: Path) -> None:
    """verifiers makes `~/.cache` for a runtime's work dir inside an env's `run()` (through
    pathlib, which is standard library): the innermost frame outside the standard library
    decides, here a module of vfcheck's package (verifiers' stands in the same place)."""
    import vfcheck

    library_file = os.path.join(os.path.dirname(vfcheck.__file__), "a_writer.py")
    library_code = compile("Path(target).mkdir(parents=True)", library_file, "exec")
    writes = FileWrites()
    writes.watch()
    try:
        exec(library_code, {"Path": Path, "target": tmp_path / "cache" / "verifiers" / "run"})
        (tmp_path / "envs.txt").write_text("x")
    finally:
        writes.stop()
    assert sorted(writes.made) == [str(tmp_path / "envs.txt")]
