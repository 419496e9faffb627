"""The check registry is the one place a check exists: the docs' catalogue and
`vfcheck list-checks` come from it, units are computed from it, and every registered check
has a fixture env that makes it fail."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT, SOURCE, check_report, vfcheck

from vfcheck.checks import CATALOGUE
from vfcheck.checks._catalogue import markdown_table


@pytest.mark.slow
def test_list_checks_markdown_prints_the_readme_table() -> None:
    done = subprocess.run([sys.executable, "-m", "vfcheck", "list-checks", "--markdown"],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == markdown_table(CATALOGUE)


def test_every_check_has_a_fixture_that_makes_it_fail() -> None:
    """A check that cannot fail is a defect: each registered check id is expected to fail
    on some fixture env named in the tests that run them."""
    from .test_checks import BROKEN, LOAD_BROKEN

    failing = {check for units in BROKEN.values() for check, _ in units}
    failing |= {"load"} if LOAD_BROKEN else set()
    failing |= {"golden.unused"}  # under strict: tests/integration/test_golden.py
    from .test_concurrency import BREAKS as CONCURRENCY_BREAKS
    from .test_fuzz_family import BROKEN as FUZZ_BROKEN
    from .test_network import BREAKS as NETWORK_BREAKS
    from .test_reward_probes import BREAKS, PROGRAM_BREAKS
    from .test_served import BREAKS as SERVED_BREAKS
    from .test_soak_memory import BREAKS as SOAK_BREAKS

    failing |= {"fuzz"} if FUZZ_BROKEN else set()  # every sampled task of each
    failing |= {check for units in (*BREAKS.values(), *PROGRAM_BREAKS.values())
                for check, _ in units}
    failing |= {check for units in SERVED_BREAKS.values() for check, _ in units}
    failing |= {check for units in NETWORK_BREAKS.values() for check, _ in units}
    failing |= {check for units in CONCURRENCY_BREAKS.values() for check, _ in units}
    failing |= {check for units in SOAK_BREAKS.values() for check, _ in units}
    missing = [spec.id for spec in CATALOGUE if spec.id not in failing]
    assert missing == [], f"no fixture breaks {missing}"


CANARY = '''"""A family that exists only as this module."""
from vfcheck.checks import check, family

family("canary", order=55, summary="a family written as one module and nothing else.")


@check("canary.tasks", family="canary", scope="env", contract="the env has a task",
       fails_when="never", why="it proves discovery")
async def tasks(ctx, _):
    return ctx.finding("canary.tasks", None, "passed", f"{len(ctx.tasks)} task(s)")
'''


@pytest.mark.slow
def test_a_new_family_is_its_module_and_nothing_else(tmp_path: Path, fixtures_dir: Path) -> None:
    """A copy of the package with one module added to `vfcheck/checks/`, nothing else
    edited: the family is listed, `--checks` takes it, its check runs in the worker and
    reports in its declared place (after noop, before episode)."""
    shutil.copytree(SOURCE, tmp_path / "vfcheck",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "vfcheck" / "checks" / "canary.py").write_text(CANARY)
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    listed = vfcheck("list-checks", cwd=tmp_path, env=env)
    assert listed.returncode == 0 and "canary.tasks" in listed.stdout, listed.stdout
    ids = [line.split()[0] for line in listed.stdout.splitlines()[1:-1]]
    assert ids.index("noop") < ids.index("canary.tasks") < ids.index("episode")
    done = check_report("vfc-echo", "--path", str(fixtures_dir), "--checks", "canary,noop",
                        cwd=tmp_path, env=env)
    findings = {f["check"]: f for f in done.envs["vfc-echo"]["findings"]}
    assert findings["canary.tasks"]["outcome"] == "passed", findings["canary.tasks"]
    assert findings["canary.tasks"]["message"] == "env 'vfc-echo': 3 task(s)"
