"""The files a run's reports go to, as the options ask: the JSON report (also while the run
goes on, as findings come), and at its end the JUnit XML, the HTML report and the GitHub
step summary. One writer for `vfcheck check`, the pytest plugin, `--from-validate`,
`vfcheck library` and `vfcheck merge`."""

from __future__ import annotations

from pathlib import Path

from vfcheck._options.resolved import RunOptions
from vfcheck._shared.findings import EnvReport


def write_reports(reports: list[EnvReport], run: RunOptions, *, verifiers: str | None,
                  seed: int | None, final: bool = True, junit: bool = True,
                  interrupted: str | None = None) -> None:
    """Write what `run` asks for. `final`: the run is over (else only the JSON report, a
    checkpoint); `junit`: this front end writes the JUnit XML (pytest writes its own);
    `interrupted`: the signal that cut the run short (`SIGTERM`), which every report says.
    The JSON report's data is built only for the reports made of it (0.14 s for 3,000
    findings)."""
    from vfcheck._frontends.report import json_report, write_json, write_junit

    html = final and run.html
    if run.json or html:
        shard = run.shard.as_dict(run.envs) if run.shard is not None else None
        data = json_report(reports, verifiers=verifiers, seed=seed, shard=shard, final=final,
                           interrupted=interrupted)
        if run.json:
            write_json(Path(run.json), data, indent=final)
        if html:
            from vfcheck._frontends.html_report import write_html

            write_html(Path(html), data)
    if final and junit and run.junit_xml:
        write_junit(Path(run.junit_xml), reports, interrupted=interrupted)
    if final:
        from vfcheck._frontends.step_summary import append_step_summary

        append_step_summary(reports, interrupted=interrupted)
