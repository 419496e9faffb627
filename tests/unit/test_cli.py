"""What `vfcheck run` and `vfcheck check` say about harness tiers, from the report data alone."""

from __future__ import annotations


def test_the_check_report_names_each_roles_tier_and_why() -> None:
    from vfcheck.findings import EnvReport
    from vfcheck.frontends.report import tier_summary

    tiers = [{"role": "agent", "tier": "fast", "harness": "vfcheck-chat",
              "reason": "replaces 'bash'; the tools run in the env's tool servers"}]
    assert tier_summary(EnvReport(id="vfc-tool", harness="fast", tiers=tiers)) == (
        "vfc-tool tiers: agent fast (vfcheck-chat: replaces 'bash'; the tools run in the "
        "env's tool servers)")
    assert tier_summary(EnvReport(id="x", harness="fast")) is None
