"""vfcheck's benchmark: vfcheck side by side with the verifiers tool it stands in for.

    python bench/bench.py [--quick] [--repeat N] [--json FILE]

Every measurement is the wall time of one child process (the real command line a user
types, default options), run on the same env and machine in one run; each pair is
interleaved (A, B, B, A, ...) so drift in machine load hits both sides. It prints the median
of each side, the ratio of the medians against the target (never asserting: a miss is
reported, the exit code stays 0), and a markdown table for the README. Each child is bounded
by `--timeout` seconds; a child that times out or fails is reported as such.

Stdlib only; the commands come from the venv this runs in (`Path(sys.executable).parent`,
also put first on PATH so verifiers' harness programs find `uv`).
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import datetime as _dt
import importlib.metadata as md
import json
import os
import platform
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
BIN = Path(sys.executable).parent
PY = sys.executable


def version(dist: str) -> str:
    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return "not installed"


def child_env(**extra: str) -> dict[str, str]:
    """This process's environment for a measured command, as on a user's machine: Python
    caches bytecode. PYTHONDONTWRITEBYTECODE (set on some CI machines and sandboxes) is
    dropped: with it every process compiles the editable checkout's modules from source,
    and pytest re-rewrites the plugin's, while verifiers, installed from a wheel, has the
    .pyc files pip wrote (about 1 s of a check, 1.5 s of a pytest run, on one side only)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.update(extra)
    return env


@dataclass
class Sample:
    seconds: float | None  # None: timed out
    rc: int | None
    tail: str = ""
    load: float | None = None  # the 1-minute load average when the child started
    cpu: float | None = None  # user + system CPU seconds of the child and its waited children
    rss: float | None = None  # peak resident memory of the child's process tree, MB


@dataclass
class Side:
    label: str
    argv: list[str]
    samples: list[Sample] = field(default_factory=list)
    ok_rc: tuple[int, ...] = (0,)
    """Exit codes of a finished run: `vfcheck check` exits 1 when a finding failed (the
    reward probes' exploits on a fresh folder with no `allow`), which is still a timing."""

    def ok_times(self) -> list[float]:
        return [s.seconds for s in self.samples if s.seconds is not None and s.rc in self.ok_rc]

    def median(self) -> float | None:
        t = self.ok_times()
        return statistics.median(t) if t else None

    def status(self) -> str:
        bad = [s for s in self.samples if s.seconds is None or s.rc not in self.ok_rc]
        if not bad:
            return ""
        s = bad[0]
        what = "timed out" if s.seconds is None else f"exit {s.rc}"
        return f"{len(bad)}/{len(self.samples)} runs {what}: {s.tail[-300:]!r}"


def proc_table() -> dict[int, tuple[int, int, float]]:
    """Every process now: pid -> (parent pid, resident bytes, CPU seconds it used so far),
    read from /proc (stdlib)."""
    table: dict[int, tuple[int, int, float]] = {}
    page, tick = os.sysconf("SC_PAGE_SIZE"), os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # proc(5), from field 3 (state) on
        table[int(entry)] = (int(fields[1]), int(fields[21]) * page,
                             (int(fields[11]) + int(fields[12])) / tick)  # utime + stime
    return table


def below(root: int, table: dict[int, tuple[int, int, float]]) -> set[int]:
    """`root` and every process below it in `table`."""
    found = {root}
    grew = True
    while grew:
        grew = False
        for pid, (ppid, _, _) in table.items():
            if ppid in found and pid not in found:
                found.add(pid)
                grew = True
    return found


class TreeSampler:
    """Reads /proc for the processes below `root` every 50 ms, in a thread, until `halt`:
    a subclass says what it keeps of each reading (`take`)."""

    def __init__(self, root: int) -> None:
        import threading

        self.root = root
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.is_set():
            table = proc_table()
            self.take(table, [pid for pid in below(self.root, table) if pid in table])
            self._stop.wait(0.05)

    def take(self, table: dict[int, tuple[int, int, float]], pids: list[int]) -> None:
        raise NotImplementedError

    def halt(self) -> None:
        self._stop.set()
        self._thread.join()


class PeakRss(TreeSampler):
    """The peak resident bytes of `root`'s process tree while the child runs."""

    peak = 0

    def take(self, table: dict[int, tuple[int, int, float]], pids: list[int]) -> None:
        self.peak = max(self.peak, sum(table[pid][1] for pid in pids))

    def stop(self) -> float:
        self.halt()
        return self.peak / 1e6


def run(argv: list[str], *, env: dict[str, str], cwd: Path, timeout: float) -> Sample:
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    p = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
                         errors="replace")
    peak = PeakRss(p.pid)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
        peak.stop()
        return Sample(None, None, (out or "")[-2000:], load)
    seconds = time.perf_counter() - start
    rss = peak.stop()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Sample(seconds, p.returncode, out[-2000:], load, cpu, rss)


def as_rss(side: Side) -> Side:
    """`side` with each sample's peak RSS (MB) in place of its seconds, for `Bench.row`."""
    return Side(f"{side.label}, peak RSS", side.argv,
                [Sample(x.rss if x.seconds is not None else None, x.rc, x.tail, x.load, x.cpu,
                        x.rss) for x in side.samples], side.ok_rc)


def cpu_ratio(a: Side, b: Side | None) -> str:
    """Median CPU seconds of each side and their ratio: what load does not skew."""
    def median(side: Side) -> float | None:
        cpus = [s.cpu for s in side.samples if s.cpu is not None]
        return statistics.median(cpus) if cpus else None

    ca, cb = median(a), (median(b) if b else None)
    if ca is None:
        return "n/a"
    if cb is None or cb <= 0:
        return f"{ca:.1f} s"
    return f"{ca:.1f} / {cb:.1f} s = {ca / cb:.2f}"


def failed_note(side: Side) -> str:
    """`exit 1 (findings failed)` when a finished `vfcheck check` reported failures."""
    return "exit 1 (findings failed)" if any(s.rc == 1 for s in side.samples) else ""


def load_range(sides: list[Side]) -> str:
    """The 1-minute load averages the samples of `sides` started at, as `lo-hi`."""
    loads = [s.load for side in sides for s in side.samples if s.load is not None]
    if not loads:
        return "n/a"
    lo, hi = min(loads), max(loads)
    return f"{lo:.1f}" if f"{lo:.1f}" == f"{hi:.1f}" else f"{lo:.1f}-{hi:.1f}"


def show(argv: list[str]) -> str:
    """The command as a user would type it (venv paths shortened)."""
    out = []
    for a in argv:
        if a == PY:
            a = "python"
        elif a.startswith(str(BIN) + os.sep):
            a = a[len(str(BIN)) + 1 :]
        out.append(a.replace(str(ROOT) + os.sep, ""))
    return shlex.join(out).replace(tempfile.gettempdir(), "$TMP")


def _stop(srv: subprocess.Popen[str]) -> None:
    """Stop a mock server the bench started: SIGTERM, then SIGKILL after 10 s."""
    srv.terminate()
    try:
        srv.wait(10)
    except subprocess.TimeoutExpired:
        srv.kill()


@contextlib.contextmanager
def mock_server(folder: Path) -> Iterator[str]:
    """`vfcheck mock-server --port 0` in `folder` (its log there), stopped on exit; yields
    the URL it printed ("" when it printed none: the caller notes the skip)."""
    with open(folder / "mock-server.log", "w") as log:
        srv = subprocess.Popen([str(BIN / "vfcheck"), "mock-server", "--port", "0"],
                               stdout=subprocess.PIPE, stderr=log, text=True, cwd=folder,
                               env=child_env(), stdin=subprocess.DEVNULL)
        try:
            url = (srv.stdout.readline() if srv.stdout else "").strip()
            yield url if url.startswith("http") else ""
        finally:
            _stop(srv)


def starts_of(reports: list[Path]) -> str:
    """`starts: 42 warm, 4 cold, 18.8 s until tool servers listened (warm)`: how the
    processes of the last run that wrote its JSON report started."""
    for report in reversed(reports):
        try:
            envs = json.loads(report.read_text())["envs"]
        except (OSError, ValueError, KeyError):
            continue
        starts = [e.get("starts") or {} for e in envs]
        warm = sum(int(s.get("warm") or 0) for s in starts)
        cold = sum(int(s.get("cold") or 0) for s in starts)
        seconds = {k: sum(float((s.get("seconds") or {}).get(k) or 0) for s in starts)
                   for k in ("warm", "cold")}
        spent = ", ".join(f"{v:.1f} s {k}" for k, v in seconds.items() if v)
        return (f"starts: {warm} warm, {cold} cold"
                + (f", until tool servers listened: {spent}" if spent else ""))
    return ""


def starts_said(side: Side) -> str:
    """The last `starts:` line `vfcheck run` printed in `side`'s samples ("" if none)."""
    said = [line for s in side.samples for line in s.tail.splitlines()
            if line.startswith("starts:")]
    return said[-1] if said else ""


def endpoint_env(sdist: Path) -> dict[str, str]:
    """A child's environment for echo-tool-v1 against `vfcheck mock-server`: the sdist
    fixtures first on PYTHONPATH, the key variable both sides name."""
    return child_env(VFCHECK_API_KEY="x", PYTHONPATH=os.pathsep.join(
        [str(sdist), *filter(None, [os.environ.get("PYTHONPATH")])]))


def tasks_passing(reports: list[Path], indices: tuple[int, ...]) -> str:
    """Whether every finding on tasks `indices` passed (or was skipped) in each report."""
    said = []
    for report in reports:
        try:
            findings = [f for e in json.loads(report.read_text())["envs"]
                        for f in e["findings"]]
        except (OSError, ValueError, KeyError):
            said.append("no report")
            continue
        bad = [f"{f['check']}[{f['task']['index']}] {f['outcome']}" for f in findings
               if (f.get("task") or {}).get("index") in indices
               and f["outcome"] not in ("passed", "skipped", "expected")]
        said.append("tasks " + ", ".join(map(str, indices))
                    + (" passing" if not bad else f" NOT passing: {', '.join(bad)}"))
    return "; ".join(dict.fromkeys(said))


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.rows: list[dict] = []
        self.notes: list[str] = []
        self.tmp = Path(tempfile.mkdtemp(prefix="vfcheck-bench-"))
        self.n = 0

    def fresh(self, name: str) -> Path:
        self.n += 1
        d = self.tmp / f"{self.n:03d}-{name}"
        d.mkdir(parents=True)
        return d

    def measure(self, sides: list[tuple[str, object]], reps: int, **kw) -> list[Side]:
        """`sides`: (label, argv or callable(rep) -> (argv, env, cwd)). Interleaved, the
        order reversed on every other repetition."""
        out = [Side(label, []) for label, _ in sides]
        for rep in range(reps):
            order = list(range(len(sides))) if rep % 2 == 0 else list(reversed(range(len(sides))))
            for i in order:
                argv, env, cwd = sides[i][1](rep)  # type: ignore[operator]
                out[i].argv = argv
                s = run(argv, env=env, cwd=cwd, timeout=self.args.timeout)
                out[i].samples.append(s)
                t = "timeout" if s.seconds is None else f"{s.seconds:7.2f}s"
                print(f"  [{rep + 1}/{reps}] {out[i].label:<42} {t} rc={s.rc}", flush=True)
        return out

    def row(
        self,
        what: str,
        a: Side,
        b: Side | None,
        *,
        target: str,
        ratio_of: str = "time",
        per: float | None = None,
        unit: str = "s",
        note: str = "",
    ) -> None:
        ma, mb = a.median(), (b.median() if b else None)
        ratio = None
        if ma is not None and mb is not None and mb > 0 and ma > 0:
            ratio = ma / mb if ratio_of == "time" else mb / ma  # "rate": higher is better

        def fmt(m: float | None) -> str:
            if m is None:
                return "n/a"
            if per is None:
                return f"{m:.0f} MB" if unit == "MB" else f"{m:.2f} s"
            # unit "…/s": a rate (count per second); else seconds per item
            return f"{per / m:.1f} {unit}" if unit.endswith("/s") else f"{m / per:.2f} {unit}"

        notes = [x for x in (note, a.status(), b.status() if b else "") if x]
        r = {
            "what": what,
            "a": a.label,
            "a_cmd": show(a.argv),
            "a_median": ma,
            "a_fmt": fmt(ma),
            "a_samples": [s.seconds for s in a.samples],
            "b": b.label if b else None,
            "b_cmd": show(b.argv) if b else None,
            "b_median": mb,
            "b_fmt": fmt(mb) if b else "",
            "b_samples": [s.seconds for s in b.samples] if b else None,
            "ratio": ratio,
            "target": target,
            "load": load_range([a, *([b] if b else [])]),
            "cpu": cpu_ratio(a, b),
            "a_loads": [x.load for x in a.samples],
            "b_loads": [x.load for x in b.samples] if b else None,
            "notes": "; ".join(notes),
        }
        self.rows.append(r)
        rs = "n/a" if ratio is None else f"{ratio:.2f}"
        print(
            f"=> {what}: {r['a_fmt']} vs {r['b_fmt'] or '-'}  ratio {rs} (target {target}, "
            f"load {r['load']}, CPU {r['cpu']})"
            + (f"  [{r['notes']}]" if r["notes"] else ""),
            flush=True,
        )

    # -- 1 ---------------------------------------------------------------------------------
    def idle(self) -> None:
        print("\n## 1. pytest plugin idle cost", flush=True)
        d = self.fresh("idle")
        (d / "test_trivial.py").write_text("def test_trivial():\n    assert 1 + 1 == 2\n")
        env = child_env()
        base = [PY, "-m", "pytest", "-q", "test_trivial.py"]
        reps = 5 * self.args.repeat  # cheap and noisy: more samples
        a, b = self.measure(
            [
                ("pytest (vfcheck plugin loaded)", lambda r: (base, env, d)),
                ("pytest -p no:vfcheck", lambda r: ([*base, "-p", "no:vfcheck"], env, d)),
            ],
            reps,
        )
        self.row("pytest idle: with plugin / -p no:vfcheck", a, b, target="<= 1.05")

    # -- 2 ---------------------------------------------------------------------------------
    def sdist_fixtures(self) -> Path | None:
        script = ROOT / "scripts" / "verifiers-fixtures"
        try:
            p = subprocess.run(
                ["bash", str(script), str(ROOT / ".vf-fixtures"), PY],
                cwd=ROOT,
                env=child_env(),
                capture_output=True,
                text=True,
                timeout=180,
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            self.notes.append(f"echo-v1 skipped: scripts/verifiers-fixtures failed ({e})")
            return None
        path = Path(p.stdout.strip().splitlines()[-1]) if p.stdout.strip() else None
        if p.returncode != 0 or path is None or not any(path.glob("echo_v1*")):
            self.notes.append(
                "echo-v1 skipped: scripts/verifiers-fixtures gave no fixtures "
                f"(rc {p.returncode}: {p.stderr.strip()[-200:]})"
            )
            return None
        return path

    def check_vs_validate(self, env_id: str, path: Path, target: str = "<= 1.5",
                          starts: bool = False) -> None:
        print(f"\n## 2. vfcheck check vs vf-validate on {env_id}", flush=True)
        reps = self.args.repeat
        env = child_env()
        venv = child_env(
            PYTHONPATH=os.pathsep.join(
                [str(path)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])
            )
        )
        chk = [str(BIN / "vfcheck"), "check", env_id, "--path", str(path)]
        reports: list[Path] = []

        def check(rep: int):
            out = self.fresh("check")
            reports.append(out / "report.json")
            return ([*chk, "--json", "report.json"] if starts else chk), env, out

        def validate(rep: int):
            out = self.fresh(f"validate-{env_id}")
            return (
                [str(BIN / "vf-validate"), env_id, "--runtime.type", "subprocess", "-o", str(out)],
                venv,
                out,
            )

        a, b, c = self.measure(
            [
                ("vfcheck check (all families)", check),
                ("vf-validate (subprocess runtime)", validate),
                (
                    "vfcheck check --checks setup,gold,noop",
                    lambda r: ([*chk, "--checks", "setup,gold,noop"], env, self.fresh("check-sgn")),
                ),
            ],
            reps,
        )
        a.ok_rc = c.ok_rc = (0, 1)  # 1: findings failed (a finished check)
        self.row(f"{env_id}: vfcheck check / vf-validate", a, b, target=target,
                 note="; ".join(n for n in (failed_note(a), starts and starts_of(reports))
                                if n))
        self.row(
            f"{env_id}: vfcheck check --checks setup,gold,noop / vf-validate", c, b, target="(info)"
        )

    def env_tier(self, sdist: Path) -> None:
        """An env-tier check (`--harness env`: verifiers' own chat program in its uv
        environment, every episode) warm and with `--cold-starts`, beside vf-validate."""
        env_id = "echo-v1"
        print(f"\n## 2e. vfcheck check --harness env on {env_id}: warm / cold harness "
              "programs", flush=True)
        env = endpoint_env(sdist)
        chk = [str(BIN / "vfcheck"), "check", env_id, "--path", str(sdist), "--harness", "env"]
        reports: dict[str, list[Path]] = {"warm": [], "cold": []}

        def check(kind: str, *extra: str) -> Callable[[int], tuple[list[str], dict, Path]]:
            def argv(rep: int) -> tuple[list[str], dict, Path]:
                out = self.fresh("envtier")
                reports[kind].append(out / "report.json")
                return [*chk, *extra, "--json", "report.json"], env, out
            return argv

        warm, cold, val = self.measure([("vfcheck check --harness env", check("warm")),
                                        ("vfcheck check --harness env --cold-starts",
                                         check("cold", "--cold-starts")),
                                        ("vf-validate (subprocess runtime)",
                                         self.validate_side(env_id, env))], self.args.repeat)
        warm.ok_rc = cold.ok_rc = (0, 1)  # 1: findings failed (a finished check)
        self.row(f"{env_id} --harness env: warm / cold harness programs", warm, cold,
                 target="(info)", note=starts_of(reports["warm"]))
        self.row(f"{env_id} --harness env: vfcheck check / vf-validate", warm, val,
                 target="(info)")

    def phases(self) -> None:
        """Where the time of `vfcheck check vfc-echo` goes: one run per family subset
        (`load` always runs, so each subset's time includes it; `determinism` is both
        determinism.load and determinism.replay)."""
        print("\n## 2b. vfcheck check vfc-echo by family subset", flush=True)
        env = child_env()
        chk = [str(BIN / "vfcheck"), "check", "vfc-echo", "--path", str(FIXTURES)]
        subsets = [
            "load",
            "determinism",
            "setup,gold,noop",
            "episode",
            "lifecycle",
            "preview",
            "robustness",
        ]

        def subset(s: str):
            return lambda r: ([*chk, "--checks", s], env, self.fresh("phase"))

        sides = [(f"--checks {s}", subset(s)) for s in subsets]
        for side in self.measure(sides, self.args.repeat):
            self.row(f"vfc-echo: vfcheck check {side.label}", side, None, target="(info)")

    def probes(self) -> None:
        """What the reward probe families (`reward`, `exploit`, `judge`) add to `vfcheck
        check vfc-echo`: every family vs every family but those three (target: <= 1.3)."""
        print("\n## 2c. the reward probes' cost on vfc-echo", flush=True)
        from vfcheck.checks import FAMILIES

        env = child_env()
        chk = [str(BIN / "vfcheck"), "check", "vfc-echo", "--path", str(FIXTURES),
               # accepted in the repo's pyproject.toml; the bench runs in folders of its own
               "--allow", "vfc-echo::exploit.echo-prompt=echoing is the task",
               "--allow", "vfc-echo::exploit.answer-spam=a lenient substring reward"]
        without = ",".join(f for f in FAMILIES if f not in ("reward", "exploit", "judge"))
        a, b = self.measure(
            [
                ("vfcheck check (every family)", lambda r: (chk, env, self.fresh("probes"))),
                ("vfcheck check (without the reward probes)",
                 lambda r: ([*chk, "--checks", without], env, self.fresh("no-probes"))),
            ],
            self.args.repeat,
        )
        self.row("vfc-echo: every family / without reward, exploit, judge", a, b,
                 target="<= 1.3")

    def served(self) -> None:
        """What the `served` family adds to `vfcheck check vfc-echo` (every family vs every
        family but `served`; target <= 1.25), and `served.data`'s own work (the env's
        `EnvServer` built and every task sent through the wire, timed inside a child that
        imported verifiers first, as the check worker has) against the whole check (target
        <= 0.05)."""
        print("\n## 2d. the served family's cost on vfc-echo", flush=True)
        from vfcheck.checks import FAMILIES

        env = child_env()
        chk = [str(BIN / "vfcheck"), "check", "vfc-echo", "--path", str(FIXTURES),
               "--allow", "vfc-echo::exploit.echo-prompt=echoing is the task",
               "--allow", "vfc-echo::exploit.answer-spam=a lenient substring reward"]
        without = ",".join(f for f in FAMILIES if f != "served")
        full, rest = self.measure(
            [
                ("vfcheck check (every family)", lambda r: (chk, env, self.fresh("served"))),
                ("vfcheck check (without served)",
                 lambda r: ([*chk, "--checks", without], env, self.fresh("no-served"))),
            ],
            self.args.repeat,
        )
        self.row("vfc-echo: every family / without served", full, rest, target="<= 1.25")
        data = Side("served.data's own work (in a child)", [PY, "-c", SERVED_DATA])
        for rep in range(self.args.repeat):
            s = run(data.argv, env=env, cwd=self.fresh("served-data"), timeout=self.args.timeout)
            said = [x for x in s.tail.splitlines() if x.startswith("served.data seconds ")]
            s.seconds = float(said[-1].split()[-1]) if said and s.rc == 0 else None
            s.cpu = None  # the child's CPU is mostly its verifiers import: not this work's
            data.samples.append(s)
            print(f"  [{rep + 1}/{self.args.repeat}] {data.label:<42} "
                  f"{s.seconds if s.seconds is not None else 'failed'} rc={s.rc}", flush=True)
        self.row("vfc-echo: served.data's own work / vfcheck check (every family)", data, full,
                 target="<= 0.05", note="its work timed inside the child, after the import")

    def fuzz(self) -> None:
        """What the `fuzz` family adds to a default `vfcheck check` (every family vs every
        family but fuzz; target <= 1.25), on vfc-echo and vfc-boxed-math, each against
        vf-validate in the same run; and what `exploit.search`'s default budget adds (every
        family but fuzz at the default `--fuzz-examples` vs at 1: the fuzz option sizes both
        searches)."""
        from vfcheck.checks import FAMILIES

        env = child_env()
        venv = child_env(PYTHONPATH=str(FIXTURES))
        without = ",".join(f for f in FAMILIES if f != "fuzz")
        for env_id in ("vfc-echo", "vfc-boxed-math"):
            print(f"\n## 2f. the fuzz family's cost on {env_id}", flush=True)
            chk = [str(BIN / "vfcheck"), "check", env_id, "--path", str(FIXTURES)]

            def side(*extra: str, chk: list[str] = chk) -> object:
                return lambda r: ([*chk, *extra], env, self.fresh("fuzz"))

            validate = self.validate_side(env_id, venv)

            full, rest, least, ref = self.measure(
                [("vfcheck check (every family)", side()),
                 ("vfcheck check (without fuzz)", side("--checks", without)),
                 ("vfcheck check (without fuzz, --fuzz-examples 1)",
                  side("--checks", without, "--fuzz-examples", "1")),
                 ("vf-validate (subprocess runtime)", validate)],
                self.args.repeat,
            )
            for s in (full, rest, least):
                s.ok_rc = (0, 1)  # 1: findings failed (a finished check)
            self.row(f"{env_id}: every family / without fuzz", full, rest, target="<= 1.25",
                     note=failed_note(full))
            self.row(f"{env_id}: every family / vf-validate", full, ref, target="(info)")
            self.row(f"{env_id}: without fuzz / vf-validate", rest, ref, target="(info)")
            self.row(f"{env_id}: without fuzz, exploit.search at its default budget / at "
                     "--fuzz-examples 1", rest, least, target="(info)")

    def validate_side(self, env_id: str, venv: dict
                      ) -> Callable[[int], tuple[list[str], dict, Path]]:
        """The `vf-validate ENV` side of a pair: the subprocess runtime, a fresh output folder
        per repetition (`venv`: its environment, the env's folder on PYTHONPATH)."""
        def validate(rep: int) -> tuple[list[str], dict, Path]:
            out = self.fresh(f"validate-{env_id}")
            return ([str(BIN / "vf-validate"), env_id, "--runtime.type", "subprocess",
                     "-o", str(out)], venv, out)
        return validate

    def training_scale(self, sdist: Path | None) -> None:
        """What this round's training-scale families add to a default `vfcheck check`
        (issue 31: `concurrency` and `soak` together, target <= 1.30; issue 30's `fuzz` on
        top of them, information), on vfc-echo and echo-tool-v1 (verifiers' tool fixture),
        each against vf-validate in the same run."""
        from vfcheck.checks import FAMILIES

        scale = {"concurrency", "soak"}
        without_scale = ",".join(f for f in FAMILIES if f not in scale)
        without_new = ",".join(f for f in FAMILIES if f not in scale | {"fuzz"})
        envs = [("vfc-echo", FIXTURES)] + ([("echo-tool-v1", sdist)] if sdist else [])
        for env_id, folder in envs:
            print(f"\n## 2s. the training-scale families' cost on {env_id}", flush=True)
            env = child_env()
            venv = child_env(PYTHONPATH=str(folder))
            chk = [str(BIN / "vfcheck"), "check", env_id, "--path", str(folder)]

            def side(*extra: str, chk: list[str] = chk, env: dict = env) -> object:
                return lambda r: ([*chk, *extra], env, self.fresh("scale"))

            validate = self.validate_side(env_id, venv)

            full, rest, least, ref = self.measure(
                [("vfcheck check (every family)", side()),
                 ("vfcheck check (without concurrency, soak)", side("--checks", without_scale)),
                 ("vfcheck check (without concurrency, soak, fuzz)",
                  side("--checks", without_new)),
                 ("vf-validate (subprocess runtime)", validate)],
                self.args.repeat,
            )
            for s in (full, rest, least):
                s.ok_rc = (0, 1)  # 1: findings failed (a finished check)
            self.row(f"{env_id}: every family / without concurrency, soak", full, rest,
                     target="<= 1.30", note=failed_note(full))
            self.row(f"{env_id}: every family / without concurrency, soak, fuzz", full, least,
                     target="(info)")
            self.row(f"{env_id}: every family / vf-validate", full, ref, target="(info)")
            self.row(f"{env_id}: without concurrency, soak, fuzz / vf-validate", least, ref,
                     target="(info)")

    def judge_formats(self) -> None:
        """What answering a judge in its own format costs (`vfcheck._model.verdict_formats`,
        the judge's `parse` tried on each pair): vfc-judge-json's judge called in a child,
        answered by verdict (formats read, parse tried) and by a fixed reply of the same
        text (nothing read), seconds per call. The check does far more than judge calls,
        so the per-call ratio bounds what it adds to a judged env's check (target <= 1.10)."""
        print("\n## 2e. a judge answered in its own format (vfc-judge-json)", flush=True)
        env = child_env()
        sides = [Side("judge call, format inferred", [PY, "-c", JUDGE_FORMAT, "verdict"]),
                 Side("judge call, a fixed reply", [PY, "-c", JUDGE_FORMAT, "fixed"])]
        for rep in range(self.args.repeat):
            for side in (sides if rep % 2 == 0 else sides[::-1]):
                s = run(side.argv, env=env, cwd=self.fresh("judge-formats"),
                        timeout=self.args.timeout)
                said = [x for x in s.tail.splitlines() if x.startswith("seconds per call ")]
                s.seconds = float(said[-1].split()[-1]) if said and s.rc == 0 else None
                s.cpu = None  # the child's CPU is mostly its verifiers import
                side.samples.append(s)
                print(f"  [{rep + 1}/{self.args.repeat}] {side.label:<42} "
                      f"{s.seconds if s.seconds is not None else 'failed'} rc={s.rc}",
                      flush=True)
        self.row("vfc-judge-json: a judge call answered in its format / a fixed reply",
                 sides[0], sides[1], target="<= 1.10",
                 note=f"{JUDGE_CALLS} calls timed inside the child, after the import")

    # -- 3 ---------------------------------------------------------------------------------
    def run_vs_eval(self) -> None:
        n, r, c = 3, 4, self.args.concurrency
        eps = n * r
        print(f"\n## 3. vfcheck run vs vf-eval on vfc-echo (-n {n} -r {r} -c {c})", flush=True)
        with mock_server(self.fresh("mock")) as url:
            if not url:
                self.notes.append("run vs eval skipped: mock-server printed no URL")
                return
            print(f"  mock-server at {url}", flush=True)
            env = child_env(
                VFCHECK_API_KEY="x",
                PYTHONPATH=os.pathsep.join(
                    [str(FIXTURES)]
                    + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])
                ),
            )
            client = [
                "--base-url",
                url,
                "--api-key-var",
                "VFCHECK_API_KEY",
                "--model",
                "vfcheck-scripted",
            ]

            def vfrun(harness: str):
                def f(rep: int):
                    out = self.fresh(f"run-{harness}")
                    return (
                        [
                            str(BIN / "vfcheck"),
                            "run",
                            "vfc-echo",
                            "--path",
                            str(FIXTURES),
                            "-n",
                            str(n),
                            "-r",
                            str(r),
                            "-c",
                            str(c),
                            "--harness",
                            harness,
                            # vf-eval's harness; `null` unquoted would parse as JSON null
                            "--env-arg",
                            'agent.harness.id="null"',
                            *client,
                            "-o",
                            str(out / "episodes.jsonl"),
                        ],
                        env,
                        out,
                    )

                return f

            def vfeval(rep: int):
                out = self.fresh("eval")
                return (
                    [
                        str(BIN / "vf-eval"),
                        "vfc-echo",
                        "-n",
                        str(n),
                        "-r",
                        str(r),
                        "-c",
                        str(c),
                        "--env.agent.harness.id",
                        "null",
                        "--env.agent.runtime.type",
                        "subprocess",
                        "--client.base-url",
                        url,
                        "--client.api-key-var",
                        "VFCHECK_API_KEY",
                        "--push",
                        "false",
                        "--model",
                        "vfcheck-scripted",
                        "-o",
                        str(out),
                    ],
                    env,
                    out,
                )

            a, b, f = self.measure(
                [
                    ("vfcheck run --harness env", vfrun("env")),
                    ("vf-eval (harness null, subprocess)", vfeval),
                    ("vfcheck run --harness fast", vfrun("fast")),
                ],
                self.args.repeat,
            )
            self.row(
                f"vfc-echo {eps} episodes: vfcheck run --harness env / vf-eval, per episode",
                a,
                b,
                target="<= 0.7",
                per=float(eps),
                unit="s/episode",
            )
            self.row(
                f"vfc-echo {eps} episodes: vfcheck run --harness fast / vf-eval, per episode",
                f,
                b,
                target="(info)",
                per=float(eps),
                unit="s/episode",
            )

    # -- 5: tool envs ---------------------------------------------------------------------
    def tools(self, sdist: Path) -> None:
        """verifiers' own tool fixture: `check` vs `vf-validate` (<= 3.0), and `run` on its
        default tier vs `vf-eval` on its default harness, per episode (<= 0.3). vf-eval talks
        to `vfcheck mock-server`; `vfcheck run` to the same scripted model in-process. Then
        the check of a tool env whose task 2 blocks (<= 90 s, tasks 0 and 1 passing). Each
        vfcheck row notes how its processes started (warm and cold, seconds until the tool
        servers listened: docs/warm-starts.md)."""
        self.check_vs_validate("echo-tool-v1", sdist, target="<= 3.0", starts=True)
        self.tool_run_vs_eval(sdist)
        self.tool_block()

    def tool_block(self) -> None:
        print("\n## 5c. vfcheck check vfc-broken-tool-block --timeout 10", flush=True)
        reports: list[Path] = []

        def check(rep: int):
            out = self.fresh("tool-block")
            reports.append(out / "report.json")
            return ([str(BIN / "vfcheck"), "check", "vfc-broken-tool-block", "--path",
                     str(FIXTURES), "--timeout", "10", "--json", "report.json"], child_env(),
                    out)

        (a,) = self.measure([("vfcheck check --timeout 10", check)], self.args.repeat)
        a.ok_rc = (0, 1)  # task 2's episode checks fail: that is the fixture
        median = a.median()
        kept = tasks_passing(reports, (0, 1))
        within = "n/a" if median is None else ("met" if median <= 90 else "**missed**")
        self.row("vfc-broken-tool-block --timeout 10: seconds (<= 90), tasks 0 and 1 passing",
                 a, None, target=f"<= 90 s ({within})",
                 note="; ".join(n for n in (kept, starts_of(reports)) if n))

    def tool_run_vs_eval(self, sdist: Path) -> None:
        n, r, c = 1, 8, self.args.concurrency
        eps = n * r
        print(f"\n## 5b. vfcheck run vs vf-eval on echo-tool-v1 (-n {n} -r {r} -c {c}), "
              "default tier and harness", flush=True)
        with mock_server(self.fresh("tool-mock")) as url:
            if not url:
                self.notes.append("tool run vs eval skipped: mock-server printed no URL")
                return
            env = endpoint_env(sdist)
            size = ["-n", str(n), "-r", str(r), "-c", str(c)]

            def vfrun(rep: int) -> tuple[list[str], dict[str, str], Path]:
                # the scripted model in-process: with --base-url vfcheck assumes a real
                # model, which may call bash's built-ins, and keeps the env tier
                out = self.fresh("tool-run")
                return ([str(BIN / "vfcheck"), "run", "echo-tool-v1", "--path", str(sdist),
                         *size, "-o", str(out / "episodes.jsonl")], env, out)

            a, b = self.measure([("vfcheck run (default tier)", vfrun),
                                 ("vf-eval (default harness bash, subprocess)",
                                  self.tool_eval(size, url, env))], self.args.repeat)
            self.row(f"echo-tool-v1 {eps} episodes: vfcheck run / vf-eval, per episode",
                     a, b, target="<= 0.3", per=float(eps), unit="s/episode",
                     note=starts_said(a))

    def tool_eval(self, size: list[str], url: str, env: dict[str, str]
                  ) -> Callable[[int], tuple[list[str], dict[str, str], Path]]:
        """The vf-eval side on echo-tool-v1 against the endpoint `url` (5b, 5e)."""
        def vfeval(rep: int) -> tuple[list[str], dict[str, str], Path]:
            out = self.fresh("tool-eval")
            return ([str(BIN / "vf-eval"), "echo-tool-v1", *size,
                     "--env.agent.runtime.type", "subprocess", "--client.base-url", url,
                     "--client.api-key-var", "VFCHECK_API_KEY", "--push", "false",
                     "--model", "vfcheck-scripted", "-o", str(out)], env, out)
        return vfeval

    def endpoint_run_vs_eval(self, sdist: Path) -> None:
        """Issue 33's endpoint target: both sides against the same real endpoint (`vfcheck
        mock-server`), so vfcheck keeps the env tier (the env's own harness program)."""
        with mock_server(self.fresh("endpoint-mock")) as url:
            if not url:
                self.notes.append("endpoint run vs eval skipped: mock-server printed no URL")
                return
            self._endpoint_run_vs_eval(sdist, url, endpoint_env(sdist))

    def _endpoint_run_vs_eval(self, sdist: Path, url: str, env: dict[str, str]) -> None:
        n, r, c = 2, 2, 4
        eps = n * r
        size = ["-n", str(n), "-r", str(r), "-c", str(c)]
        print(f"\n## 5e. vfcheck run --base-url vs vf-eval on echo-tool-v1 ({' '.join(size)}), "
              "one endpoint", flush=True)

        def vfrun(rep: int) -> tuple[list[str], dict[str, str], Path]:
            out = self.fresh("tool-run-endpoint")
            return ([str(BIN / "vfcheck"), "run", "echo-tool-v1", "--path", str(sdist), *size,
                     "--base-url", url, "--api-key-var", "VFCHECK_API_KEY",
                     "-o", str(out / "episodes.jsonl")], env, out)

        a, b = self.measure([("vfcheck run --base-url (env tier)", vfrun),
                             ("vf-eval (default harness bash, subprocess)",
                              self.tool_eval(size, url, env))], self.args.repeat)
        self.row(f"echo-tool-v1 {eps} episodes against one endpoint: vfcheck run / vf-eval, "
                 "per episode", a, b, target="<= 0.5", per=float(eps), unit="s/episode",
                 note=starts_said(a))

    # -- 4 ---------------------------------------------------------------------------------
    def scaling(self) -> None:
        k = self.args.tasks
        print(f"\n## 4. scaling: vfc-many, {k} tasks, setup/gold/noop", flush=True)
        env = child_env()
        venv = child_env(PYTHONPATH=str(FIXTURES))

        def validate(rep: int):
            out = self.fresh("validate-many")
            return (
                [
                    str(BIN / "vf-validate"),
                    "vfc-many",
                    "--taskset.num-tasks",
                    str(k),
                    "--runtime.type",
                    "subprocess",
                    "-o",
                    str(out),
                ],
                venv,
                out,
            )

        chk = [
            str(BIN / "vfcheck"),
            "check",
            "vfc-many",
            "--path",
            str(FIXTURES),
            "--env-arg",
            f"num_tasks={k}",
            "--checks",
            "setup,gold,noop",
        ]
        a, b = self.measure(
            [
                (
                    "vfcheck check --checks setup,gold,noop",
                    lambda r: (chk, env, self.fresh("many")),
                ),
                ("vf-validate", validate),
            ],
            self.args.repeat,
        )
        self.row(
            f"vfc-many {k} tasks: tasks/s, vfcheck / vf-validate",
            a,
            b,
            target=">= 1.0",
            ratio_of="rate",
            per=float(k),
            unit="tasks/s",
        )

        m = self.args.xdist_tasks
        print(f"\n## 4b. pytest --vf-env vfc-many ({m} tasks): -n 2 vs -n 0", flush=True)
        if version("pytest-xdist") == "not installed":
            self.notes.append("pytest -n 2 vs -n 0 skipped: pytest-xdist not installed")
            return
        base = [
            PY,
            "-m",
            "pytest",
            "-q",
            "--vf-env",
            "vfc-many",
            "--vf-env-arg",
            f"num_tasks={m}",
            f"--vf-path={FIXTURES}",
        ]
        a, b = self.measure(
            [
                ("pytest -n 2", lambda r: ([*base, "-n", "2"], env, self.fresh("xdist"))),
                ("pytest -n 0", lambda r: ([*base, "-n", "0"], env, self.fresh("xdist"))),
            ],
            self.args.repeat,
        )
        self.row(f"pytest --vf-env vfc-many ({m} tasks): -n 2 / -n 0", a, b, target="(info)")

    # -- 4t --------------------------------------------------------------------------------
    def thousand(self) -> None:
        """Issue 33's many-task target: a 1,000-task chat env's setup/gold/noop against
        vf-validate on the same env, in time and in peak RSS of the whole process tree."""
        k = 1000
        print(f"\n## 4t. vfc-many, {k} tasks, setup/gold/noop: time and peak RSS", flush=True)
        venv = child_env(PYTHONPATH=str(FIXTURES))

        def validate(rep: int):
            out = self.fresh("validate-thousand")
            return ([str(BIN / "vf-validate"), "vfc-many", "--taskset.num-tasks", str(k),
                     "--runtime.type", "subprocess", "-o", str(out)], venv, out)

        chk = [str(BIN / "vfcheck"), "check", "vfc-many", "--path", str(FIXTURES),
               "--env-arg", f"num_tasks={k}", "--checks", "setup,gold,noop"]
        a, b = self.measure([("vfcheck check --checks setup,gold,noop",
                              lambda r: (chk, child_env(), self.fresh("thousand"))),
                             ("vf-validate", validate)], self.args.repeat)
        self.row(f"vfc-many {k} tasks: vfcheck / vf-validate, time", a, b, target="<= 1.0")
        self.row(f"vfc-many {k} tasks: vfcheck / vf-validate, peak RSS of the process tree",
                 as_rss(a), as_rss(b), target="<= 1.5", unit="MB")

    # -- 2p --------------------------------------------------------------------------------
    def front_ends(self) -> None:
        """Issue 33's front-end target: `pytest --vf-env ENV` against `vfcheck check ENV`,
        the same env and the same (default) families, in one run."""
        print("\n## 2p. pytest --vf-env vfc-echo vs vfcheck check vfc-echo", flush=True)
        env = child_env()
        chk = [str(BIN / "vfcheck"), "check", "vfc-echo", "--path", str(FIXTURES)]
        test = [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--vf-env", "vfc-echo",
                f"--vf-path={FIXTURES}"]
        a, b = self.measure([("pytest --vf-env", lambda r: (test, env, self.fresh("pytest"))),
                             ("vfcheck check", lambda r: (chk, env, self.fresh("cli")))],
                            self.args.repeat)
        for side in (a, b):
            side.ok_rc = (0, 1)  # the reward probes' exploits fail in a fresh folder
        self.row("vfc-echo: pytest --vf-env / vfcheck check", a, b, target="<= 1.1",
                 note=failed_note(b))

    # -- 4c --------------------------------------------------------------------------------
    HUGE_SCRIPT = '[[default.turn]]\nfault = "huge"\n'
    """Every agent turn a 100 kB reply: the robustness check's `100 kB reply` episode."""

    def huge(self) -> None:
        """The 100 kB reply episode against a normal one: `vfcheck run vfc-echo` of N
        episodes, one at a time, with each reply; the medians of the episodes' own durations
        (its JSONL's `duration`: the interpreter's start and verifiers' import drop out)."""
        n = 40
        print(f"\n## 4c. a 100 kB reply episode vs a normal one ({n} episodes each)", flush=True)
        env = child_env()
        script = self.tmp / "huge.toml"
        script.write_text(self.HUGE_SCRIPT)
        outputs: dict[str, list[Path]] = {"normal": [], "huge": []}

        def play(kind: str) -> object:
            def argv(rep: int) -> tuple[list[str], dict[str, str], Path]:
                out = self.fresh(f"huge-{kind}")
                outputs[kind].append(out / "episodes.jsonl")
                return ([str(BIN / "vfcheck"), "run", "vfc-echo", "--path", str(FIXTURES),
                         "-n", "1", "-r", str(n), "-c", "1", "-o", str(out / "episodes.jsonl"),
                         *(["--script", str(script)] if kind == "huge" else [])], env, out)
            return argv

        normal, huge = self.measure([(f"{n} episodes (normal reply)", play("normal")),
                                     (f"{n} episodes (100 kB reply)", play("huge"))],
                                    self.args.repeat)

        def durations(kind: str) -> list[float]:
            found = []
            for path in outputs[kind]:
                if path.exists():
                    found += [json.loads(line)["duration"]
                              for line in path.read_text().splitlines()]
            return found

        load = load_range([normal, huge])
        for side, kind in ((normal, "normal"), (huge, "huge")):  # milliseconds per episode
            side.samples = [Sample(d * 1000, 0, load=s.load) for d in durations(kind)
                            for s in side.samples[:1]] or side.samples
        self.row(f"vfc-echo: one 100 kB reply episode / one normal episode ({n} each, -c 1, "
                 "the episodes' own durations)", huge, normal, target="<= 2.0", per=1.0,
                 unit="ms", note=f"load {load} while they ran")

    # -- 5 ---------------------------------------------------------------------------------
    SPREAD_ENVS = ("vfc-echo", "vfc-many", "vfc-multiturn", "vfc-duet")
    SPREAD_CHECKS = ("load,determinism,setup,gold,noop,episode,lifecycle,preview,robustness,"
                     "golden,hygiene")
    """The conformance families, which the well-behaved fixtures pass (the reward probes
    fail vfc-echo by design, and a failing run has no time in the median)."""

    def spread(self) -> None:
        """`pytest --vf-env` on 4 envs, `-n 2` vs `-n 0`: under `-n 2` with its workers on
        this machine the controller checks the envs (`--vf-spread=auto`); with
        `--vf-spread=workers` each env is checked on the xdist worker that runs its items
        (`--dist loadscope`), after the controller loaded it to learn its items. The rows'
        ratios are speed-ups, -n 0's time over -n 2's."""
        print("\n## 5. pytest --vf-env on 4 envs: -n 2 vs -n 0", flush=True)
        if version("pytest-xdist") == "not installed":
            self.notes.append("pytest 4 envs -n 2 vs -n 0 skipped: pytest-xdist not installed")
            return
        env = child_env()
        base = [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                *[w for e in self.SPREAD_ENVS for w in ("--vf-env", e)],
                f"--vf-path={FIXTURES}", f"--vf-golden-dir={ROOT / 'golden'}",
                f"--vf-checks={self.SPREAD_CHECKS}"]
        before = " ".join(f"{x:.1f}" for x in os.getloadavg())
        serial, local, spread = self.measure(
            [
                ("pytest -n 0 (4 envs)", lambda r: ([*base, "-n", "0"], env,
                                                    self.fresh("spread"))),
                ("pytest -n 2 (4 envs)", lambda r: ([*base, "-n", "2"], env,
                                                    self.fresh("spread"))),
                ("pytest -n 2 --vf-spread=workers", lambda r: (
                    [*base, "-n", "2", "--vf-spread=workers"], env, self.fresh("spread"))),
            ],
            self.args.repeat,
        )
        after = " ".join(f"{x:.1f}" for x in os.getloadavg())
        self.row(
            "pytest --vf-env, 4 envs (conformance families): speed-up, -n 0 time / -n 2 time "
            "(workers on this machine: the controller checks the envs)",
            serial, local, target=">= 1.3",
            note=f"load average {before} before / {after} after this section",
        )
        self.row(
            "pytest --vf-env, 4 envs: speed-up, -n 0 time / -n 2 --vf-spread=workers time "
            "(each env checked on its worker, loaded twice)",
            serial, spread, target="(info)",
        )

    # -- report ----------------------------------------------------------------------------
    def table(self, started: str, load: tuple[str, str], wall: float) -> str:
        head = [
            f"Measured {started}, {os.cpu_count()} cores (`os.cpu_count()`), "
            f"{platform.python_implementation()} {platform.python_version()}, "
            f"verifiers {version('verifiers')}, vfcheck {version('vfcheck')}, "
            f"repetitions {self.args.repeat}, load average {load[0]} at start / {load[1]} at "
            f"end, {wall:.0f} s in all.",
            "",
            f"`{show([PY, *sys.argv])}`",
            "",
            "| measurement | vfcheck (median) | reference (median) | ratio | target | load | CPU |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in self.rows:
            ratio = "n/a" if r["ratio"] is None else f"{r['ratio']:.2f}"
            met = ""
            if r["ratio"] is not None and r["target"].startswith(("<=", ">=")):
                lim = float(r["target"].split()[1])
                ok = r["ratio"] <= lim if r["target"].startswith("<=") else r["ratio"] >= lim
                met = " (met)" if ok else " (**missed**)"
            ref = f"{r['b_fmt']} ({r['b']})" if r["b"] else "—"
            note = f" — {r['notes']}" if r["notes"] else ""
            head.append(
                f"| {r['what']}{note} | {r['a_fmt']} | {ref} | "
                f"{ratio if r['b'] else '—'} | {r['target']}{met if r['b'] else ''} | "
                f"{r.get('load', 'n/a')} | {r.get('cpu', 'n/a')} |"
            )
        if self.notes:
            head += ["", *[f"- {n}" for n in self.notes]]
        return "\n".join(head)


SERVED_DATA = f"""
import asyncio, time, types
from vfcheck._episodes.offline import prepare_process_env
prepare_process_env([{str(FIXTURES)!r}])
import verifiers.v1
from vfcheck.checks.served import judge_wire
from vfcheck._episodes.runner import load_env, load_tasks
from vfcheck._episodes.served import ServedEnv
env, _ = load_env("vfc-echo")
tasks = load_tasks(env, None)
async def main():
    start = time.perf_counter()
    async with ServedEnv.open(env) as served:
        for task in tasks:
            judge_wire(types.SimpleNamespace(env=env), task, served)
    print("served.data seconds", time.perf_counter() - start)
asyncio.run(main())
"""
"""`served.data`'s work on vfc-echo as the check worker does it: the env's `EnvServer`
built (its refusals are findings), then every task through the wire and compared."""

JUDGE_CALLS = 200
JUDGE_FORMAT = f"""
import asyncio, sys, time
sys.path.insert(0, {str(FIXTURES)!r})
from vfc_judge_json import FaithfulnessJudge
from vfc_judge import VfcJudgeTaskConfig
from vfcheck._model import Reply, ScriptedModel, judge_policy
reply = Reply.text('{{"faithful": true, "covered": 3}}')
model = ScriptedModel(judge_policy("positive" if sys.argv[1] == "verdict" else reply))
async def main():
    judge = FaithfulnessJudge(VfcJudgeTaskConfig().judge)
    with model.mock():
        await judge.evaluate(question="q", answer="a", response="r")  # warm
        start = time.perf_counter()
        for _ in range({JUDGE_CALLS}):
            parsed = (await judge.evaluate(question="q", answer="a", response="r")).parsed
    assert parsed == 1.0, parsed
    print("seconds per call", (time.perf_counter() - start) / {JUDGE_CALLS})
asyncio.run(main())
"""
"""vfc-judge-json's judge called through verifiers' `Judge.evaluate` against the scripted
model in-process: answered `positive` (its format read, its parse tried) or with the same
text fixed (`sys.argv[1]`: `verdict` or `fixed`)."""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: 1 repetition, 50 tasks for vfc-many, 10 for pytest -n",
    )
    ap.add_argument("--repeat", type=int, default=None, help="repetitions per side (default 3)")
    ap.add_argument("--json", type=Path, help="write raw samples and medians here")
    ap.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="bound per child process, seconds (default 600; --quick 300)",
    )
    ap.add_argument("--concurrency", "-c", type=int, default=4, help="-c for run/eval (4)")
    ap.add_argument("--tasks", type=int, default=None, help="vfc-many tasks (200; --quick 50)")
    ap.add_argument(
        "--xdist-tasks",
        type=int,
        default=None,
        help="vfc-many tasks for pytest -n 2 vs -n 0 (20; --quick 10)",
    )
    ap.add_argument(
        "--only",
        default="idle,check,frontend,envtier,phases,probes,served,fuzz,scale,judge,run,scaling,"
                "thousand,huge,spread,tools,endpoint",
        help="sections to run (comma-separated; default all)",
    )
    args = ap.parse_args(argv)
    args.repeat = args.repeat or (1 if args.quick else 3)
    args.timeout = args.timeout or (300.0 if args.quick else 600.0)
    args.tasks = args.tasks or (50 if args.quick else 200)
    args.xdist_tasks = args.xdist_tasks or (10 if args.quick else 20)
    only = set(args.only.split(","))

    started = _dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    load0 = " ".join(f"{x:.1f}" for x in os.getloadavg())
    t0 = time.perf_counter()
    print(
        f"vfcheck bench {started}: {os.cpu_count()} cores, load average {load0}, "
        f"verifiers {version('verifiers')}, repeat {args.repeat}, timeout {args.timeout:.0f}s "
        "per child. Timings are wall clock; other work on this machine skews them "
        "(pairs are interleaved so both sides see the same load).",
        flush=True,
    )
    if shutil.which("uv", path=str(BIN)) is None:
        print(f"note: no uv in {BIN}; harness programs may fail", flush=True)

    compileall.compile_dir(ROOT / "vfcheck", quiet=1)  # no sample pays the first compile
    compileall.compile_dir(FIXTURES, quiet=1)
    b = Bench(args)
    try:
        if "idle" in only:
            b.idle()
        sd = b.sdist_fixtures() if only & {"check", "envtier", "tools", "endpoint"} else None
        if "check" in only:
            b.check_vs_validate("vfc-echo", FIXTURES)
            if sd is not None:
                b.check_vs_validate("echo-v1", sd)
        if "frontend" in only:
            b.front_ends()
        if "envtier" in only and sd is not None:
            b.env_tier(sd)
        if "phases" in only:
            b.phases()
        if "probes" in only:
            b.probes()
        if "served" in only:
            b.served()
        if "fuzz" in only:
            b.fuzz()
        if "scale" in only:
            b.training_scale(b.sdist_fixtures())
        if "judge" in only:
            b.judge_formats()
        if "run" in only:
            b.run_vs_eval()
        if "scaling" in only:
            b.scaling()
        if "thousand" in only:
            b.thousand()
        if "huge" in only:
            b.huge()
        if "spread" in only:
            b.spread()
        if "tools" in only and sd is not None:
            b.tools(sd)
        if "endpoint" in only and sd is not None:
            b.endpoint_run_vs_eval(sd)
    except KeyboardInterrupt:
        b.notes.append("interrupted: partial results")
    finally:
        load1 = " ".join(f"{x:.1f}" for x in os.getloadavg())
        wall = time.perf_counter() - t0
        md_table = b.table(started, (load0, load1), wall)
        print("\n" + md_table, flush=True)
        if args.json:
            args.json.write_text(
                json.dumps(
                    {
                        "date": started,
                        "cpu_count": os.cpu_count(),
                        "verifiers": version("verifiers"),
                        "vfcheck": version("vfcheck"),
                        "python": platform.python_version(),
                        "argv": sys.argv,
                        "repeat": args.repeat,
                        "load_average": [load0, load1],
                        "wall": wall,
                        "rows": b.rows,
                        "notes": b.notes,
                        "markdown": md_table,
                    },
                    indent=2,
                )
            )
        shutil.rmtree(b.tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
