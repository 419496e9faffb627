"""Which pytest-xdist `--tx` specs run their workers on this machine."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(("spec", "here"), [
    ("popen", True), ("3*popen", True), ("popen//python=python3.12", True),
    ("popen//chdir=elsewhere", True), ("ssh=ci@build-2//python=python3", False),
    ("socket=192.168.1.102:8888", False), ("2*popen//via=proxy", False),
])
def test_a_tx_spec_names_whether_its_workers_run_on_this_machine(spec: str,
                                                                  here: bool) -> None:
    from vfcheck._frontends.xdist_spread import on_this_machine

    assert on_this_machine(spec) is here
