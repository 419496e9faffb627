"""The library suite: hold the installed verifiers to the contracts vfcheck relies on.

Findings go under the env id `verifiers@<version>`, in four families: `usage` (what the
CLIs' usage lines and help tell users is true), `api` (the hooks vfcheck calls exist with
the shapes it uses; `vf-eval`'s documented contract), `lifecycle` and `preview` (verifiers'
own notify behaviour on a probe env). Known behaviours of a version are `expected` through
the baseline shipped next to this file (`baseline-<version>.toml`); see `baseline.py`.

Importing this package is cheap: verifiers is imported only when the suite runs.
"""

from __future__ import annotations

from vfcheck._library.baseline import Baseline, apply_baseline, load_baseline, shipped_baseline
from vfcheck._library.result import LIBRARY_FAMILIES, library_env_id
from vfcheck._library.suite import PROBE_ENV, collect, library_findings, library_findings_async

__all__ = [
    "LIBRARY_FAMILIES",
    "PROBE_ENV",
    "Baseline",
    "apply_baseline",
    "collect",
    "library_env_id",
    "library_findings",
    "library_findings_async",
    "load_baseline",
    "shipped_baseline",
]
