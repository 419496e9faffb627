"""`pytest --vf-library`, with and without xdist, when the library suite's process dies
before it writes its report: a collection error within seconds that says so, never a wait
without end (with `-n 2` the workers collect, and only the controller knew the process)."""

from __future__ import annotations

import pytest

DIE_IN_THE_LIBRARY_RUN = """
import os
import sys

if sys.orig_argv[1:4] == ["-m", "vfcheck", "library"]:
    sys.stderr.write("the library run was killed by this test\\n")
    os._exit(3)
"""
"""A `sitecustomize` that ends `python -m vfcheck library` at its start, as a crash would."""


@pytest.mark.slow
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["alone", "xdist"])
def test_a_library_run_that_dies_is_a_collection_error_at_once(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: list[str]
) -> None:
    site = pytester.mkdir("site")
    (site / "sitecustomize.py").write_text(DIE_IN_THE_LIBRARY_RUN)
    monkeypatch.setenv("PYTHONPATH", str(site))
    result = pytester.runpytest_subprocess("--vf-library", *workers, "-p", "no:cacheprovider",
                                           timeout=240)
    output = result.stdout.str() + result.stderr.str()
    # pytest's codes for an error in collection: INTERRUPTED alone, TESTS_FAILED under xdist
    assert result.ret in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.TESTS_FAILED), (
        result.ret, output)
    assert "the library suite ended without writing its report" in output, output
    assert "the library run was killed by this test" in output, output
    assert "Traceback" not in output, output
