"""What `vfcheck run` and `vfcheck check` say about harness tiers, from the report data alone."""

from __future__ import annotations

import pytest


def test_the_check_report_names_each_roles_tier_and_why() -> None:
    from vfcheck._frontends.report import tier_summary
    from vfcheck._shared.findings import EnvReport

    tiers = [{"role": "agent", "tier": "fast", "harness": "vfcheck-chat",
              "reason": "replaces 'bash'; the tools run in the env's tool servers"}]
    assert tier_summary(EnvReport(id="vfc-tool", harness="fast", tiers=tiers)) == (
        "vfc-tool tiers: agent fast (vfcheck-chat: replaces 'bash'; the tools run in the "
        "env's tool servers)")
    assert tier_summary(EnvReport(id="x", harness="fast")) is None


def test_version_prints_the_version_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    from vfcheck import __version__
    from vfcheck._frontends.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"vfcheck {__version__}"


def test_a_typod_flag_prints_its_subcommands_usage(capsys: pytest.CaptureFixture[str]) -> None:
    from vfcheck._frontends.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["check", "--chekcs", "gold", "vfc-echo"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: vfcheck check ")
    assert "--checks A,B" in err  # the subcommand's own flags
    assert err.splitlines()[-1] == ("vfcheck check: error: unrecognized arguments: --chekcs "
                                    "(did you mean --checks?)")


def test_pytest_xdist_is_a_runtime_dependency() -> None:
    """`pytest --vf-env myenv -n 2` works in a user's venv, which has no dev extra."""
    import tomllib

    from support import ROOT

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert any(d.startswith("pytest-xdist") for d in project["dependencies"])
