"""Which process starts may be warm, and the request that asks the zygote for one.

Pure: no process is started here (`vfcheck._host.warm_starts` does that). A start is
warm only when a fork of a zygote (`vfcheck._host.zygote`) is the same process a cold
start would have been, in a session of its own (as verifiers' subprocess runtime asks), with
nothing that acts between fork and exec (`preexec_fn`, `pass_fds`, another user, a umask):

- this very Python running `-m MODULE` or `-c CODE` with no other interpreter flag, and an
  environment that starts the interpreter as the tool servers' zygote's did (`START_VARS`);
- or any Python, named by its path, running a script file (`python prog.py ...`: a harness
  program in its uv environment), forked by a zygote of that interpreter started for that
  script and exactly that environment (`script_key`). verifiers' activated form of the same
  start (`sh -c ACTIVATE uv-script VENV python prog.py ...`) is one too: the environment
  that shell gives the interpreter is asked of the same shell (`WarmRequest.activation`).

Anything else starts cold, as it always has; `plan` says why in a few words.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

START_PREFIXES = ("PYTHON",)
"""Variables read while an interpreter starts (`PYTHONPATH`, `PYTHONHASHSEED`, ...): a fork
of the zygote started under the zygote's, so a request must carry the same values."""
START_VARS = frozenset({"LANG", "LC_ALL", "LC_CTYPE", "VFCHECK_CHILD_SOCKETS"})
"""The same for the locale (the encoding of stdio) and vfcheck's socket guard, which the
zygote's startup hook installed (`vfcheck._host.child_sockets`)."""
CLEAN_KWARGS = {
    "preexec_fn": None, "pass_fds": (), "user": None, "group": None, "extra_groups": None,
    "umask": -1, "process_group": None, "executable": None, "shell": False,
    "close_fds": True, "restore_signals": True,
}
"""`subprocess.Popen` arguments a warm start cannot honour unless they have these values."""
PYTHON_NAME = re.compile(r"python(\d+(\.\d+)?)?")
"""The file name of a Python interpreter (`python`, `python3`, `python3.12`)."""
ACTIVATE = ('export VIRTUAL_ENV="$1" PATH="${1}/bin:$HOME/.local/bin:$PATH" '
            'UV_INSTALL_DIR="$HOME/.local/bin" UV_RUN_RECURSION_DEPTH=1; shift; exec "$@"')
"""The shell command of verifiers' `Runtime.prepare_uv_script(activate=True)` (0.4.0): it
sets four variables and execs the interpreter (`vfcheck library` checks the text)."""
MAX_REQUEST = 1 << 20
"""Bytes a request may take on the zygote's socket (one datagram); a bigger one starts cold."""


@dataclass(frozen=True)
class WarmRequest:
    """What the zygote's child becomes: `python -m target *args` (`kind` "module"),
    `python -c target *args` ("code") or `python target *args` ("script", where `python`
    is the interpreter asked for), in `cwd`, with exactly `env`."""

    kind: str
    target: str
    args: list[str]
    env: dict[str, str]
    cwd: str
    python: str = ""
    """The interpreter a script runs in (its path as asked); "" for this one's -m/-c."""
    activation: list[str] = field(default_factory=list)
    """`[sh, "-c", ACTIVATE, name, venv]` where the script was asked for through verifiers'
    activating shell: `env` is then what that shell was given, not yet what it gives."""

    @property
    def argv(self) -> list[str]:
        """The command line a cold start would have shown (`python -m x`)."""
        if self.kind == "script":
            return ["python", self.target, *self.args]
        return ["python", "-m" if self.kind == "module" else "-c", self.target, *self.args]

    def encode(self) -> bytes:
        fields = asdict(self)
        fields.pop("activation")  # resolved before a request is sent
        return json.dumps(fields).encode()

    @classmethod
    def decode(cls, data: bytes) -> WarmRequest:
        fields = json.loads(data)
        return cls(str(fields["kind"]), str(fields["target"]),
                   [str(a) for a in fields["args"]],
                   {str(k): str(v) for k, v in fields["env"].items()}, str(fields["cwd"]),
                   str(fields.get("python") or ""))


def start_vars(env: Mapping[str, str]) -> dict[str, str]:
    """The variables of `env` that act on how an interpreter starts."""
    return {k: v for k, v in env.items() if k.startswith(START_PREFIXES) or k in START_VARS}


def plan(argv: Sequence[Any], kwargs: Mapping[str, Any], *, executable: str,
         zygote_env: Mapping[str, str], environ: Mapping[str, str],
         cwd: str) -> WarmRequest | str:
    """The warm request for a `Popen(argv, **kwargs)`, or why it must start cold.

    `executable` is this Python (`sys.executable`), `zygote_env` the environment the tool
    servers' zygote started with, `environ` and `cwd` this process's (a start that names
    neither inherits them)."""
    words = [os.fsdecode(a) if isinstance(a, (str, bytes, os.PathLike)) else None
             for a in argv]
    if len(words) < 2 or any(w is None for w in words):
        return "not a python -m/-c command"
    program, first, *rest = [str(w) for w in words]
    where = os.fsdecode(kwargs["cwd"]) if kwargs.get("cwd") is not None else cwd
    activation: list[str] = []
    if (os.path.basename(program) == "sh" and first == "-c" and rest[:1] == [ACTIVATE]
            and len(rest) >= 5):
        activation = [program, first, *rest[:3]]
        program, first, *rest = rest[3:]
    script = is_script(program, first, where)
    if activation and not script:
        return "another program"
    if not script:
        if not rest:
            return "not a python -m/-c command"
        if not same_interpreter(program, executable):
            return "another program"
        if first not in ("-m", "-c"):
            return f"python {first}, not -m/-c"
    if not kwargs.get("start_new_session"):
        return "not in a session of its own"
    for name, clean in CLEAN_KWARGS.items():
        value = kwargs.get(name, clean)
        if value != clean and not (name == "pass_fds" and not value):
            return f"{name}={value!r}"
    env = dict(environ if kwargs.get("env") is None else kwargs["env"])
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        return "an environment of bytes"
    if not script and start_vars(env) != start_vars(zygote_env):
        differ = sorted(set(start_vars(env).items()) ^ set(start_vars(zygote_env).items()))
        return f"interpreter settings differ ({', '.join(sorted({k for k, _ in differ}))})"
    if not os.path.isdir(where):
        return "its working directory does not exist"
    if script:
        request = WarmRequest("script", first, rest, env, os.path.abspath(where), program,
                              activation)
    else:
        request = WarmRequest("module" if first == "-m" else "code", rest[0], rest[1:], env,
                              os.path.abspath(where))
    if len(request.encode()) > MAX_REQUEST:
        return "a request too big for the zygote's socket"
    return request


def is_script(program: str, first: str, cwd: str) -> bool:
    """Whether `program first ...` is a Python, named by its path, running the script file
    `first` (relative to `cwd`) with no interpreter flag: a harness program's start."""
    return (os.path.isabs(program) and PYTHON_NAME.fullmatch(os.path.basename(program))
            is not None and os.path.isfile(program) and not first.startswith("-")
            and os.path.isfile(os.path.join(cwd, first)))


WORKDIR_VARS = frozenset({"PWD", "OLDPWD"})
"""Variables a shell sets to the working directory (each episode's runtime has its own):
they stay out of `script_key`, as the working directory does."""


def script_key(request: WarmRequest) -> tuple[str, str, tuple[tuple[str, str], ...]]:
    """Which zygote forks a script request: one per interpreter, script and environment
    (an import reads the environment it runs in: the zygote's must be the child's), the
    working directory aside (`WORKDIR_VARS`)."""
    return (request.python, os.path.join(request.cwd, request.target),
            tuple(sorted((k, v) for k, v in request.env.items() if k not in WORKDIR_VARS)))


def same_interpreter(program: str, executable: str) -> bool:
    """Whether `program` starts this Python with this Python's packages: the same file
    (`python3` beside `python` counts), from the same folder. A virtual environment's
    `bin/python` is a link to its base interpreter, so another venv's (a uv script's) has
    the same real path and other packages: sys.prefix comes from where the link lies."""
    return (os.path.dirname(os.path.abspath(program))
            == os.path.dirname(os.path.abspath(executable))
            and os.path.realpath(program) == os.path.realpath(executable))


def exit_code(code: object) -> tuple[int, str | None]:
    """What an interpreter exits with for `sys.exit(code)`, and what it prints first:
    None is 0, an int is itself, anything else is printed to stderr and exits 1."""
    if code is None:
        return 0, None
    if not isinstance(code, int):
        return 1, str(code)
    return code & 0xFF, None


def starts_line(summary: Mapping[str, Any]) -> str:
    """`starts: 12 warm (forked from a warm interpreter), 2 cold (2 another program)`: how
    the processes verifiers asked for started (`WarmStarts.summary`)."""
    warm, cold = int(summary.get("warm") or 0), int(summary.get("cold") or 0)
    reasons = summary.get("reasons") or {}
    why = ", ".join(f"{n} {reason}" for reason, n in sorted(reasons.items(),
                                                              key=lambda r: -r[1]))
    line = f"starts: {warm} warm (forked from a warm interpreter), {cold} cold"
    if cold and why:
        line += f" ({why})"
    seconds = summary.get("seconds") or {}
    if seconds:
        line += "; tool servers listening after " + ", ".join(
            f"{seconds[k]:.1f}s {k}" for k in ("warm", "cold") if k in seconds)
    zygote = summary.get("zygote")
    if zygote and zygote not in ("ready", "the warm interpreter was stopped", *reasons) \
            and not warm:
        line += f"; warm starts unused: {zygote}"
    return line
