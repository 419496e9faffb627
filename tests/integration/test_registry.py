"""The check registry is the one place a check exists: the docs' catalogue and
`vfcheck list-checks` come from it, units are computed from it, and every registered check
has a fixture env that makes it fail."""

from __future__ import annotations

import subprocess
import sys

import pytest

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
    from .test_network import BREAKS as NETWORK_BREAKS
    from .test_reward_probes import BREAKS
    from .test_served import BREAKS as SERVED_BREAKS

    failing |= {check for units in BREAKS.values() for check, _ in units}
    failing |= {check for units in SERVED_BREAKS.values() for check, _ in units}
    failing |= {check for units in NETWORK_BREAKS.values() for check, _ in units}
    missing = [spec.id for spec in CATALOGUE if spec.id not in failing]
    assert missing == [], f"no fixture breaks {missing}"
