"""Where a default `vfcheck check` spends its wall clock: the critical path, phase by phase.

    python bench/profile.py [--repeat N] [--envs vfc-echo,echo-v1,echo-tool-v1] [--json FILE]

Each run is `vfcheck check ENV --json REPORT` as a user types it; the phases come from the
report's `timeline` (when the worker process was spawned, said hello with its imports done,
had loaded the env, and when each check unit started and ended, by the worker's clock) and
from this script's own clock around the child (the front end's start, the reports at the
end). Beside it, in the same run: `vf-validate` on the same env, and a bare
`python -c "import verifiers.v1"` (the floor both share). Medians of `--repeat` runs.

Phases (seconds on the critical path, which add up to the wall clock):
- front end: from the command's start to the worker process's spawn;
- worker imports: spawn to hello (vfcheck's check modules and, with them, verifiers);
- load: hello to the plan (the `load` gate: verifiers' loader, the taskset);
- checks: the plan to the worker's `done` (every family at once; the families' own spans,
  end minus plan, show which one holds the path);
- reports: `done` to the command's exit (the supervisor's end, the reports, the exit).

And the CPU each kind of process used (`CpuByKind`): the front end, the check worker,
`determinism.load`'s second load, the zygote, the tool servers and probes it forks, harness
programs: where both cores go, which the critical path alone does not say.

Stdlib only, as bench/bench.py; it prints a markdown table and never asserts.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import BIN, FIXTURES, PY, ROOT, TreeSampler, child_env

PHASES = ("front end", "worker imports", "load", "checks", "reports")
AFTER = ("hygiene",)
"""Families of the worker's `after` phase: they run once the others are done, so they end
last whatever holds the path."""


def fixtures_path() -> Path | None:
    """verifiers' sdist fixture envs (echo-v1, echo-tool-v1), as bench/bench.py finds them."""
    p = subprocess.run(["bash", str(ROOT / "scripts" / "verifiers-fixtures"),
                        str(ROOT / ".vf-fixtures"), PY], cwd=ROOT, env=child_env(),
                       capture_output=True, text=True, timeout=300)
    lines = p.stdout.strip().splitlines()
    return Path(lines[-1]) if p.returncode == 0 and lines else None


KINDS = ("front end", "worker", "second load", "zygote", "tool servers, probes",
         "harness programs", "other")
"""Who used the CPU, by command line (`kind_of`)."""


def kind_of(cmdline: str, is_root: bool) -> str:
    """The kind of a process of a `vfcheck check`'s tree, from its command line: the second
    load is `determinism.load`'s fresh interpreter (`worker --hashes`), the zygote's forks
    carry the title of what they run (`python -m <toolset module>`, `python -c ...`)."""
    if is_root:
        return "front end"
    if "vfcheck._isolation.worker" in cmdline:
        return "second load" if "--hashes" in cmdline else "worker"
    if "vfcheck._host.zygote" in cmdline:
        return "zygote"
    if cmdline.startswith(("uv ", "uvx ")) or "/uv " in cmdline or "environments-v2" in cmdline:
        return "harness programs"
    if " -m " in f" {cmdline} " or " -c " in f" {cmdline} ":
        return "tool servers, probes"
    return "other"


class CpuByKind(TreeSampler):
    """The CPU seconds each kind of process below `root` used (`KINDS`), from /proc every
    50 ms while it runs: each process's last reading, so one that lived under 50 ms, or
    used CPU in its last 50 ms, counts for less than it used; `unseen` is the rest of the
    tree's total (its children's rusage)."""

    def __init__(self, root: int) -> None:
        self.last: dict[int, tuple[str, float]] = {}
        super().__init__(root)

    def take(self, table: dict[int, tuple[int, int, float]], pids: list[int]) -> None:
        for pid in pids:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmdline = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:
                continue
            kind = kind_of(cmdline, pid == self.root) if cmdline else \
                self.last.get(pid, ("other", 0.0))[0]
            self.last[pid] = (kind, table[pid][2])

    def stop(self, total: float) -> dict[str, float]:
        self.halt()
        kinds = dict.fromkeys(KINDS, 0.0)
        for kind, cpu in self.last.values():
            kinds[kind] += cpu
        kinds["unseen"] = max(0.0, total - sum(kinds.values()))
        return {k: round(v, 2) for k, v in kinds.items()}


def timed(argv: list[str], *, cwd: Path, env: dict[str, str]
          ) -> tuple[float, float, int, dict[str, float]]:
    """Start, end, exit code, and CPU seconds by kind of process (`CpuByKind`)."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.time()
    p = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    cpu = CpuByKind(p.pid)
    rc = p.wait(timeout=900)
    end = time.time()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return start, end, rc, cpu.stop(total)


def profile_check(env_id: str, path: Path) -> dict[str, object]:
    """One `vfcheck check`: its phases and each family's span after the load."""
    with tempfile.TemporaryDirectory(prefix="vfcheck-profile-") as tmp:
        report = Path(tmp) / "report.json"
        start, end, rc, cpu = timed([str(BIN / "vfcheck"), "check", env_id, "--path",
                                     str(path), "--json", str(report)], cwd=Path(tmp),
                                    env=child_env())
        env = json.loads(report.read_text())["envs"][0]
    events = env["timeline"]["events"]
    spawned, hello = events["spawned"], events["hello"]
    plan, done = events.get("plan", hello), events.get("done", end)
    phases = {"front end": spawned - start, "worker imports": hello - spawned,
              "load": plan - hello, "checks": done - plan, "reports": end - done}
    spans: dict[str, list[float]] = defaultdict(lambda: [float("inf"), 0.0, 0.0])
    for check, _index, began, ended in env["timeline"]["units"]:
        family = check.split(".")[0] if check != "determinism.load" else check
        span = spans[family]
        span[0], span[1] = min(span[0], began - plan), max(span[1], ended - plan)
        span[2] += ended - began
    return {"wall": end - start, "rc": rc, "phases": phases, "cpu": cpu,
            "families": {f: (round(s[0], 3), round(s[1], 3), round(s[2], 3))
                         for f, s in spans.items() if f != "load"}}


def wall(argv: list[str], env: dict[str, str]) -> float:
    with tempfile.TemporaryDirectory(prefix="vfcheck-profile-") as tmp:
        start, end, _, _ = timed(argv, cwd=Path(tmp), env=env)
    return end - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--envs", default="vfc-echo,echo-v1,echo-tool-v1")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    sdist = fixtures_path()
    paths = {"vfc-echo": FIXTURES, "vfc-boxed-math": FIXTURES}
    rows: dict[str, dict[str, object]] = {}
    load = Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").exists() else "?"
    floor = [wall([PY, "-c", "import verifiers.v1"], child_env()) for _ in range(args.repeat)]
    for env_id in args.envs.split(","):
        path = paths.get(env_id) or sdist
        if path is None:
            print(f"{env_id}: skipped (scripts/verifiers-fixtures gave no fixtures)")
            continue
        runs, validate = [], []
        for _ in range(args.repeat):
            runs.append(profile_check(env_id, path))
            validate.append(wall([str(BIN / "vf-validate"), env_id, "--runtime.type",
                                  "subprocess", "-o", tempfile.mkdtemp()],
                                 child_env(PYTHONPATH=str(path))))
        rows[env_id] = {"runs": runs, "vf-validate": validate}
    print(table(rows, floor, load))
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "import verifiers": floor}, indent=2))
    return 0


def table(rows: dict[str, dict[str, object]], floor: list[float], load: str) -> str:
    med = statistics.median
    out = [f"load average at the start: {load}; `python -c 'import verifiers.v1'`: "
           f"{med(floor):.2f} s (median of {len(floor)})", "",
           "| env | wall | vf-validate | ratio | " + " | ".join(PHASES) + " | path held by |",
           "|---|---|---|---|" + "---|" * len(PHASES) + "---|"]
    for env_id, row in rows.items():
        runs: list[dict] = row["runs"]  # type: ignore[assignment]
        validate = med(row["vf-validate"])  # type: ignore[arg-type]
        wall_s = med(r["wall"] for r in runs)
        phases = [med(r["phases"][p] for r in runs) for p in PHASES]
        last = runs[len(runs) // 2]["families"]
        held = sorted(((f, s) for f, s in last.items() if f not in AFTER),
                      key=lambda kv: -kv[1][1])[:3]
        out.append(f"| {env_id} | {wall_s:.2f} s | {validate:.2f} s | {wall_s / validate:.2f}x | "
                   + " | ".join(f"{p:.2f}" for p in phases) + " | "
                   + ", ".join(f"{f} (+{s[1]:.2f} s)" for f, s in held)
                   + " |")
    kinds = [*KINDS, "unseen"]
    out += ["", "CPU seconds by process (medians; `unseen`: used by processes the 50 ms "
            "samples missed, or after their last sample):", "",
            "| env | total | " + " | ".join(kinds) + " |", "|---|---|" + "---|" * len(kinds)]
    for env_id, row in rows.items():
        runs = row["runs"]  # type: ignore[assignment]
        by_kind = [med(r["cpu"][k] for r in runs) for k in kinds]
        total = med(sum(r["cpu"].values()) for r in runs)
        out.append(f"| {env_id} | {total:.2f} | " + " | ".join(f"{c:.2f}" for c in by_kind)
                   + " |")
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
