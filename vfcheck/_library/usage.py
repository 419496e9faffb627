"""The `usage` family: what verifiers' CLIs tell their users is true of the installed CLIs.

- `usage.names.<cli>`: a `USAGE` string names its command as `vf-<name>` (a bare `eval`
  is not on anyone's PATH);
- `usage.scripts.<cli>`: each `vf-*` it names is a console script of the installed
  distribution pointing at the module the string lives in, and every console script has
  a `USAGE`;
- `usage.paths.<cli>.<where>:<path>`: each path the USAGE or a flag's help tells users to
  pass (a resume config, a run dir, `vf-init --path`) is where the command, run offline
  on the probe env, really wrote. One finding per claim, passed ones too.

The strings are read from source (`source.py`), so every finding cites file:line.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from typing import Literal as Kind

from vfcheck._library.clis import CliRun, CliRuns
from vfcheck._library.result import finding, verdict
from vfcheck._library.source import (
    Literal,
    cite,
    field_docs,
    flag_of,
    line_of,
    module_constant,
    module_name,
    verifiers_root,
)
from vfcheck._shared.findings import Finding

RUN_OF_SCRIPT = {"vf-eval": "eval", "vf-validate": "validate", "vf-debug": "debug",
                 "vf-replay": "replay"}
"""The offline run whose files a script's path claims are judged against."""
_RUN_DIR_PATH = re.compile(r"<run-dir>/(\S+)")
_FILE_PATH = re.compile(r"^(?:[\w.<>-]+/)*[\w<>-]+\.(?:jsonl|json|log|toml)$")
_TICKS = re.compile(r"`([^`]+)`")


@dataclass(frozen=True)
class UsageString:
    module: str
    literal: Literal
    script: str | None
    """The console script whose entry point is in `module` (None: no script does)."""

    @property
    def label(self) -> str:
        return self.script or self.module.removeprefix("verifiers.v1.cli.")

    @property
    def where(self) -> str:
        return f"{self.label}'s USAGE ({self.literal.cite()})"


def find_usages(scripts: dict[str, str]) -> list[UsageString]:
    """Every module-level `USAGE` under `verifiers/v1/cli/`, read from source (imported
    only when it is not a literal)."""
    root = verifiers_root()
    folder = root / "v1" / "cli" if root else None
    if folder is None or not folder.is_dir():
        return []
    script_of = {target.partition(":")[0]: name for name, target in sorted(scripts.items())}
    found = []
    for path in sorted(folder.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        assigned = re.search(r"^USAGE\s*=", text, re.M)
        if assigned is None:
            continue
        name = module_name(path)
        literal = module_constant(path, "USAGE")
        if literal is None:
            line = text[: assigned.start()].count("\n") + 1
            try:
                value = getattr(importlib.import_module(name), "USAGE", None)
            except Exception as e:  # noqa: BLE001 - an unreadable USAGE names no command
                value = f"(USAGE unreadable: {type(e).__name__}: {e})"
            literal = Literal(path, line, line, value if isinstance(value, str) else "")
        found.append(UsageString(name, literal, script_of.get(name)))
    return found


def commands_named(text: str, known: set[str]) -> list[str]:
    """The command each usage line runs: the word after `uv run`, after `usage:`, or a
    continuation line's first word when it is a known CLI name (bare or `vf-`); prose
    lines (the description) name none."""
    commands = []
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        lead = words[0] == "usage:"
        if lead:
            words = words[1:]
        if words[:2] == ["uv", "run"] and len(words) > 2:
            commands.append(words[2])
        elif words and (lead or words[0] in known):
            commands.append(words[0])
    return commands


def names_findings(usages: list[UsageString], scripts: dict[str, str]) -> list[Finding]:
    """`usage.names.*` and `usage.scripts.*`."""
    known = set(scripts) | {name.removeprefix("vf-") for name in scripts}
    findings: list[Finding] = []
    with_usage: set[str] = set()
    for usage in usages:
        commands = commands_named(usage.literal.text, known)
        bare = sorted({c for c in commands if not c.startswith("vf-")})
        check = f"usage.names.{usage.label}"
        if not commands:
            findings.append(finding(check, "failed", f"{usage.where} names no command",
                                    source=usage.literal.cite(), observed="no command"))
        else:
            named = ", ".join(sorted(set(commands)))
            message = (f"{usage.where} names {named}" if not bare else
                       f"{usage.where} names the bare command(s) {', '.join(bare)}; expected "
                       f"{', '.join('vf-' + b for b in bare)} (the console scripts)")
            findings.append(finding(check, verdict(not bare), message,
                                    source=usage.literal.cite(), commands=commands,
                                    observed=f"names {named}"))
        problems = []
        for command in sorted({c for c in commands if c.startswith("vf-")}):
            with_usage.add(command)
            target = scripts.get(command)
            if target is None:
                problems.append(f"verifiers installs no console script {command}")
            elif target.partition(":")[0] != usage.module:
                problems.append(f"{command} runs {target}, not {usage.module}")
        message = (f"{usage.where}: " + "; ".join(problems) if problems else
                   f"{usage.where} names console scripts of this module "
                   f"({', '.join(sorted({c for c in commands if c.startswith('vf-')}))})")
        findings.append(finding(f"usage.scripts.{usage.label}", verdict(not problems), message,
                                source=usage.literal.cite(), scripts=dict(scripts),
                                observed="; ".join(problems) or "ok"))
    for script in sorted(set(scripts) - with_usage - {u.label for u in usages}):
        findings.append(finding(
            f"usage.scripts.{script}", "failed",
            f"console script {script} ({scripts[script]}) has no USAGE naming it",
            observed="no USAGE",
        ))
    return findings


@dataclass(frozen=True)
class PathClaim:
    """One place a CLI tells its user a path: where, what it says, how to check it."""

    script: str
    source: str
    """`USAGE`, the flag whose help says it (`--resume`), or `output`."""
    path: str
    cite: str
    says: str
    kind: Kind["file", "out-flag", "source-run", "init-path", "init-default", "init-install"]

    @property
    def check(self) -> str:
        return f"usage.paths.{self.script}.{self.source}:{self.path}"

    @property
    def where(self) -> str:
        if self.source == "USAGE":
            return f"{self.script}'s USAGE ({self.cite})"
        if self.source == "output":
            return f"{self.script}'s printed next steps ({self.cite})"
        return f"{self.script}'s {self.source} help ({self.cite})"


def _says(literal: Literal, needle: str) -> tuple[str, str]:
    """(citation, the quoted source line) of `needle` inside `literal`."""
    lines = literal.path.read_text(encoding="utf-8").splitlines()
    line = line_of(lines, needle, literal.lineno, literal.end_lineno)
    return cite(literal.path, line), lines[line - 1].strip()


def path_claims(usages: list[UsageString]) -> list[PathClaim]:
    claims: list[PathClaim] = []
    for usage in usages:
        if usage.script is None:
            continue
        claims += _usage_claims(usage)
        claims += _help_claims(usage.script)
    unique: dict[str, PathClaim] = {}
    for claim in claims:
        unique.setdefault(claim.check, claim)
    return list(unique.values())


def _usage_claims(usage: UsageString) -> Iterator[PathClaim]:
    text, script = usage.literal.text, usage.script
    assert script is not None
    for match in _RUN_DIR_PATH.finditer(text):
        yield PathClaim(script, "USAGE", match.group(1), *_says(usage.literal, match.group(0)),
                        "file")
    if "-o <output-dir>" in text:
        yield PathClaim(script, "USAGE", "-o <output-dir>",
                        *_says(usage.literal, "-o <output-dir>"), "out-flag")
    if re.search(rf"{re.escape(script)} <(output|run)-dir>", text):
        yield PathClaim(script, "USAGE", "<output-dir>", *_says(usage.literal, "-dir>"),
                        "source-run")
    init = re.search(r"\[--path (\S+?)\]", text)
    if init:
        yield PathClaim(script, "USAGE", "--path", *_says(usage.literal, "--path"), "init-path")
        yield PathClaim(script, "USAGE", init.group(1), *_says(usage.literal, "--path"),
                        "init-default")
        source = usage.literal.path.read_text(encoding="utf-8").splitlines()
        printed = [i for i, text in enumerate(source, 1)
                   if "print(" in text and "uv pip install -e" in text]
        line = printed[0] if printed else line_of(source, "uv pip install -e", 1, len(source))
        yield PathClaim(script, "output", "uv pip install -e",
                        cite(usage.literal.path, line), source[line - 1].strip(), "init-install")


def _help_claims(script: str) -> Iterator[PathClaim]:
    """Paths in the help of a CLI's config fields (`configs/cli/<name>.py`)."""
    root = verifiers_root()
    name = script.removeprefix("vf-")
    path = root / "v1" / "configs" / "cli" / f"{name}.py" if root else None
    if path is None or not path.is_file() or script not in RUN_OF_SCRIPT:
        return
    helps = list(field_docs(path))
    top = next((h.cls for h in helps if h.cls.lower() == f"{name}config"), "")
    for help_ in helps:
        for token in _TICKS.findall(help_.doc.text):
            token = token.strip()
            claimed = _RUN_DIR_PATH.search(token)
            bare = token.removeprefix("@ ").strip()
            if claimed:
                rel = claimed.group(1)
            elif (_FILE_PATH.match(bare) and not bare.startswith("file.")) or (
                bare.startswith("outputs/") and " " not in bare
            ):
                rel = bare
            else:
                continue
            yield PathClaim(script, flag_of(path, help_, top), rel,
                            *_says(help_.doc, rel), "file")


def judge(claim: PathClaim, runs: CliRuns) -> Finding:
    """The finding of one claim, against what the offline runs wrote."""
    if claim.kind.startswith("init"):
        return _judge_init(claim, runs)
    label = RUN_OF_SCRIPT.get(claim.script)
    if claim.kind == "source-run":
        label = "replay-usage"
    run = runs.get(label) if label else None
    details: dict[str, Any] = {"source": claim.cite, "says": claim.says, "claimed": claim.path}
    if run is None:
        return finding(claim.check, "skipped",
                       f"{claim.where}: vfcheck does not run {claim.script} offline", **details)
    details["command"] = run.shown
    if claim.kind == "source-run":
        ok = run.returncode == 0 and run.run_dir() is not None
        observed = run.outcome()
        if ok:
            message = (f"{claim.where}: `{run.shown}` on a vf-eval run dir re-scored it "
                       f"({_rel(run, run.run_dir())})")
        else:
            message = (f"{claim.where} tells users to pass a finished run's dir; `{run.shown}` "
                       f"on the run dir vf-eval just wrote fails: {observed}")
        return finding(claim.check, verdict(ok), message, observed=observed,
                       output=run.tail(), **details)
    if run.problem or run.returncode != 0:
        return finding(claim.check, "error",
                       f"{claim.where}: could not check, `{run.shown}` failed ({run.outcome()})",
                       output=run.tail(), **details)
    base = run.run_dir()
    if base is None:
        return finding(claim.check, "error",
                       f"{claim.where}: could not check, `{run.shown}` left no single run dir "
                       f"matching {run.run_glob}", written=run.files(), **details)
    if claim.kind == "out-flag":
        rel = _rel(run, base)
        return finding(claim.check, "passed",
                       f"{claim.where}: the run dir is under the -o folder ({rel})",
                       observed="run dir under -o", actual=rel, **details)
    root = run.cwd if claim.path.startswith("outputs/") else base
    pattern = re.sub(r"<[^>]+>", "*", claim.path)
    hits = sorted(p for p in root.glob(pattern))
    written = run.files(root)
    details["written"] = written
    if hits:
        actual = hits[0].relative_to(root).as_posix()
        return finding(claim.check, "passed",
                       f"{claim.where} names {_shown(claim.path, root, base)}; "
                       f"{claim.script} wrote {actual}",
                       observed=f"wrote {actual}", actual=actual, **details)
    leaf = Path(claim.path).name
    same = [f for f in written if Path(f).name == leaf]
    actual_text = ", ".join(same) if same else f"no {leaf} at all"
    return finding(
        claim.check, "failed",
        f"{claim.where} names {_shown(claim.path, root, base)}, but {claim.script} wrote "
        f"{actual_text} there",
        observed=f"wrote {actual_text}", expected=claim.path, actual=same, **details,
    )


def _shown(path: str, root: Path, base: Path) -> str:
    return path if root != base else f"<run-dir>/{path}"


def _rel(run: CliRun, path: Path | None) -> str:
    return path.relative_to(run.cwd).as_posix() if path is not None else "(none)"


def _judge_init(claim: PathClaim, runs: CliRuns) -> Finding:
    label = "init-path" if claim.kind == "init-path" else "init-default"
    run = runs.get(label)
    details: dict[str, Any] = {"source": claim.cite, "says": claim.says, "claimed": claim.path}
    if run is None or run.problem or run.returncode != 0:
        outcome = run.outcome() if run else "not run"
        return finding(claim.check, "error",
                       f"{claim.where}: could not check, vf-init failed ({outcome})", **details)
    details["command"] = run.shown
    written = run.files()
    details["written"] = written
    if claim.kind == "init-install":
        said = re.search(r"uv pip install -e (\S+)", run.stdout)
        target = said.group(1) if said else None
        ok = target is not None and (run.cwd / target / "pyproject.toml").is_file()
        observed = f"prints {target}" + ("" if ok else " (no pyproject.toml there)")
        return finding(claim.check, verdict(ok),
                       f"{claim.where}: `uv pip install -e {target}` names "
                       + ("the scaffolded package" if ok else "no package vf-init wrote"),
                       observed=observed, **details)
    folder = "custom" if claim.kind == "init-path" else claim.path.removeprefix("./")
    packages = sorted(p.parent.relative_to(run.cwd).as_posix()
                      for p in run.cwd.glob(f"{folder}/*/pyproject.toml"))
    ok = bool(packages)
    flag = "--path custom" if claim.kind == "init-path" else "no --path"
    message = (f"{claim.where}: `{run.shown}` ({flag}) created {', '.join(packages)}" if ok else
               f"{claim.where}: `{run.shown}` ({flag}) created no package under {folder}/; "
               f"it wrote {', '.join(written) or 'nothing'}")
    return finding(claim.check, verdict(ok), message,
                   observed=f"package in {folder}/" if ok else "wrote elsewhere", **details)


def usage_findings(scripts: dict[str, str], runs: CliRuns | None) -> list[Finding]:
    """Every `usage` finding; `runs` None: the path claims are skipped (no CLI was run)."""
    usages = find_usages(scripts)
    if not usages:
        return [finding("usage.names", "failed",
                        "no USAGE string under verifiers/v1/cli (the suite holds v1 CLIs to "
                        "their usage lines)", observed="no USAGE")]
    findings = names_findings(usages, scripts)
    for claim in path_claims(usages):
        if runs is None:
            findings.append(finding(claim.check, "skipped",
                                    f"{claim.where}: the CLIs were not run"))
        else:
            findings.append(judge(claim, runs))
    return findings
