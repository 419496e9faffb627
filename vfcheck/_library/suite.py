"""The library suite end to end: run the CLIs and the probe episodes, gather every finding,
apply the baseline.

The slow parts overlap: the CLI runs (seconds each, in child processes) start first, the
hooks are probed while verifiers imports in a worker thread (the event loop keeps driving
the children), then the probe episodes play in-process. One scratch dir holds everything
the CLIs write and is removed afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from vfcheck._library.baseline import (
    Baseline,
    apply_baseline,
    load_baseline,
    shipped_baseline,
    shipped_versions,
)
from vfcheck._library.result import finding, library_env_id
from vfcheck._shared.compat import NOT_INSTALLED, verifiers_version
from vfcheck._shared.findings import Finding

PROBE_ENV = "vfc-library-probe"
"""The env the suite plays and runs the CLIs on (bundled: `envs/vfc_library_probe.py`)."""
BUNDLED_ENVS = Path(__file__).resolve().parent / "envs"


def probe_paths(fixtures: Path | None) -> list[Path]:
    """Env folders for the probe: `fixtures` first (it may shadow the bundled probe)."""
    return [*([fixtures] if fixtures is not None else []), BUNDLED_ENVS]


async def collect(*, fixtures: Path | None = None, env_id: str | None = None,
                  run_clis: bool = True) -> list[Finding]:
    """Every library finding, raw (no baseline). `run_clis=False` skips the CLI runs
    (their findings are skipped), for a quick in-process look."""
    from vfcheck._episodes.offline import prepare_process_env
    from vfcheck._library.api import eval_findings, hook_findings
    from vfcheck._library.clis import CliRuns, console_scripts, observe_clis
    from vfcheck._library.port_files import port_file_findings
    from vfcheck._library.scenarios import scenario_findings
    from vfcheck._library.served import served_findings
    from vfcheck._library.usage import usage_findings

    version = verifiers_version()
    if version == NOT_INSTALLED:
        return [finding("api.verifiers", "failed", "verifiers is not installed",
                        observed="not installed")]
    paths = probe_paths(fixtures)
    env_id = env_id or PROBE_ENV
    prepare_process_env([str(p) for p in paths])  # before verifiers is first imported
    with tempfile.TemporaryDirectory(prefix="vfcheck-library-") as scratch:
        clis: asyncio.Future[CliRuns] | None = None
        if run_clis:
            clis = asyncio.ensure_future(observe_clis(env_id, paths, Path(scratch)))
        try:
            hooks, missing = await asyncio.to_thread(hook_findings, version)
            played = await scenario_findings(env_id, paths, missing)
            played += await served_findings(env_id, paths, served_gap(missing))
            runs = await clis if clis is not None else None
        finally:
            if clis is not None and not clis.done():
                clis.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await clis
        # Judged while the scratch dir exists: the usage checks read what the CLIs wrote.
        usage = usage_findings(console_scripts(), runs)
        api_eval = eval_findings(runs)
    return [*usage, *hooks, *port_file_findings(), *api_eval, *played]


def served_gap(missing: dict[str, str]) -> str | None:
    """Why the served checks cannot run on this verifiers (a hook they need is missing)."""
    from vfcheck._library.api import SERVED_NEEDS

    return next((missing[c] for c in SERVED_NEEDS if c in missing), None)


def baseline_for(version: str | None, baseline_file: Path | None) -> Baseline | None:
    if baseline_file is not None:
        return load_baseline(baseline_file)
    return shipped_baseline(version) if version else None


def note_missing_baseline(findings: list[Finding], version: str | None) -> list[Finding]:
    """Without a baseline for this version every known behaviour fails: say why."""
    shipped = ", ".join(shipped_versions()) or "none"
    note = (f" (vfcheck ships no library baseline for verifiers {version}; baselines: "
            f"{shipped})")
    for f in findings:
        if f.outcome == "failed":
            f.message += note
    return findings


async def library_findings_async(
    *,
    baseline: bool = True,
    fixtures: Path | None = None,
    env_id: str | None = None,
    baseline_file: Path | None = None,
    run_clis: bool = True,
) -> tuple[str, list[Finding]]:
    """The library suite: (`verifiers@<version>`, findings). With `baseline`, the shipped
    baseline of the installed version (or `baseline_file`) marks known behaviours
    `expected`; `fixtures` is an extra env folder, `env_id` the env to probe (default the
    bundled `vfc-library-probe`)."""
    version = verifiers_version()
    findings = await collect(fixtures=fixtures, env_id=env_id, run_clis=run_clis)
    if baseline:
        known = baseline_for(version, baseline_file)
        if known is not None and (baseline_file is not None or known.version == version):
            findings = apply_baseline(findings, known)
        else:
            findings = note_missing_baseline(findings, version)
    return library_env_id(version), findings


def library_findings(
    *,
    baseline: bool = True,
    fixtures: Path | None = None,
    env_id: str | None = None,
    baseline_file: Path | None = None,
    run_clis: bool = True,
) -> tuple[str, list[Finding]]:
    """`library_findings_async`, from sync code; inside a running event loop (a pytest
    item, a notebook) it runs on a loop of its own in a worker thread."""
    coro = library_findings_async(baseline=baseline, fixtures=fixtures, env_id=env_id,
                                  baseline_file=baseline_file, run_clis=run_clis)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(1, thread_name_prefix="vfcheck-library") as pool:
        return pool.submit(asyncio.run, coro).result()
