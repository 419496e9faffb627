"""Findings: the one data model both front ends report (the JSON report contract).

A finding is a verdict of one check on one task (or on the env as a whole). `failed` means
the env (or library) broke a contract; `error` means vfcheck could not run the check —
never a verdict on the env; `expected` marks a baselined library behaviour.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Outcome = Literal["passed", "failed", "skipped", "error", "expected"]
"""`failed`: the env broke the contract; `error`: vfcheck could not run the check, never a
verdict on the env; `expected`: a failure the user allowed, or a baselined library
behaviour."""
OUTCOMES: tuple[Outcome, ...] = ("passed", "failed", "skipped", "error", "expected")
BAD_OUTCOMES = frozenset({"failed", "error"})


@dataclass(frozen=True)
class TaskId:
    """A task as findings name it: its index in the taskset and its key."""

    index: int
    key: str

    def label(self) -> str:
        return f"task {self.index} ({self.key})"


@dataclass
class Finding:
    """One check's verdict on an env or a task: what the reports print, the JSON report
    holds and pytest turns into an item's outcome."""

    check: str
    """The check id, e.g. `gold` or `lifecycle.order`."""
    family: str
    task: TaskId | None
    outcome: Outcome
    message: str
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def bad(self) -> bool:
        return self.outcome in BAD_OUTCOMES

    @property
    def usage(self) -> bool:
        """The user's input stopped the check (a script entry or env arg the env cannot
        take): the front ends report a usage error, not a verdict."""
        return bool(self.details.get("usage"))

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["task"] = asdict(self.task) if self.task is not None else None
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Finding:
        task = data.get("task")
        if data["outcome"] not in OUTCOMES:
            raise ValueError(f"outcome {data['outcome']!r} is none of {', '.join(OUTCOMES)}")
        return cls(
            check=data["check"],
            family=data["family"],
            task=TaskId(**task) if task else None,
            outcome=data["outcome"],
            message=data["message"],
            details=dict(data.get("details") or {}),
        )


@dataclass
class EnvReport:
    """Everything one env run produced: the findings and the context to replay them."""

    id: str
    harness: str = "fast"
    sample: list[int] = field(default_factory=list)
    tasks: list[TaskId] = field(default_factory=list)
    tiers: list[dict[str, str]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    worker_starts: int = 0
    """Worker processes started for this env: 1 unless a stall forced a restart."""
    worker: str = "main"
    """Which front-end process checked it: `main` (`vfcheck check`, `pytest` without xdist
    or its controller), or the xdist worker's id (`gw1`)."""
    host: str = ""
    """The machine it was checked on (a CI matrix's shards, remote xdist workers)."""
    starts: dict[str, Any] = field(default_factory=dict)
    """How the processes verifiers asked for started: `warm` and `cold` counts, why the
    cold ones were (`reasons`), seconds until tool servers listened (`seconds`), and what
    the warm interpreter was (`zygote`) (`vfcheck._host.warm_starts`)."""
    timeline: dict[str, Any] = field(default_factory=dict)
    """When the worker said hello, was ready, planned and was done, and each check unit's
    start and end (epoch seconds; `vfcheck._isolation.events.EventLog.timeline`)."""
    not_run: list[str] = field(default_factory=list)
    """The units its worker never came to (`gold[2]`; `gold[*]` before the env's tasks were
    known): the run was interrupted or stopped early. Empty once every unit has a finding."""

    def seconds(self, finding: Finding) -> float | None:
        """How long the unit that made `finding` ran, if the timeline holds it."""
        index = finding.task.index if finding.task else None
        for check, at, start, end in self.timeline.get("units") or []:
            if check == finding.check and at == index:
                return max(0.0, float(end) - float(start))
        return None

    @property
    def bad(self) -> bool:
        return any(f.bad for f in self.findings)

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = dict.fromkeys(OUTCOMES, 0)
        for f in self.findings:
            counts[f.outcome] += 1
        return counts

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "harness": self.harness,
            "sample": list(self.sample),
            "tiers": list(self.tiers),
            "tasks": [asdict(task) for task in self.tasks],
            "worker_starts": self.worker_starts,
            "worker": self.worker,
            "host": self.host,
            "starts": dict(self.starts),
            "timeline": dict(self.timeline),
            "not_run": list(self.not_run),
            "findings": [f.as_dict() for f in self.findings],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EnvReport:
        """An env of a JSON report, read back (`vfcheck merge`, an xdist worker's report);
        raises KeyError, TypeError or ValueError on what is no env of a vfcheck report."""
        return cls(
            id=str(data["id"]),
            harness=str(data.get("harness", "")),
            sample=[int(i) for i in data.get("sample") or []],
            tasks=[TaskId(int(t["index"]), str(t["key"])) for t in data.get("tasks") or []],
            tiers=list(data.get("tiers") or []),
            findings=[Finding.from_dict(f) for f in data["findings"]],
            worker_starts=int(data.get("worker_starts") or 0),
            worker=str(data.get("worker") or "main"),
            host=str(data.get("host") or ""),
            starts=dict(data.get("starts") or {}),
            timeline=dict(data.get("timeline") or {}),
            not_run=[str(unit) for unit in data.get("not_run") or []],
        )
