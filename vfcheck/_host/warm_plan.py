"""Which process starts may be warm, and the request that asks the zygote for one.

Pure: no process is started here (`vfcheck._host.warm_starts` does that). A start is
warm only when a fork of the zygote (`vfcheck._host.zygote`) is the same process a cold
start would have been: this very Python running `-m MODULE` or `-c CODE` with no other
interpreter flag, in a session of its own (as verifiers' subprocess runtime asks), with
nothing that acts between fork and exec (`preexec_fn`, `pass_fds`, another user, a umask),
and an environment that starts the interpreter as the zygote's did (`START_VARS`). Anything
else starts cold, as it always has; `plan` says why in a few words.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
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
MAX_REQUEST = 1 << 20
"""Bytes a request may take on the zygote's socket (one datagram); a bigger one starts cold."""


@dataclass(frozen=True)
class WarmRequest:
    """What the zygote's child becomes: `python -m target *args` (`kind` "module") or
    `python -c target *args` ("code"), in `cwd`, with exactly `env`."""

    kind: str
    target: str
    args: list[str]
    env: dict[str, str]
    cwd: str

    @property
    def argv(self) -> list[str]:
        """The command line a cold start would have shown (`python -m x`)."""
        return ["python", "-m" if self.kind == "module" else "-c", self.target, *self.args]

    def encode(self) -> bytes:
        return json.dumps(asdict(self)).encode()

    @classmethod
    def decode(cls, data: bytes) -> WarmRequest:
        fields = json.loads(data)
        return cls(str(fields["kind"]), str(fields["target"]),
                   [str(a) for a in fields["args"]],
                   {str(k): str(v) for k, v in fields["env"].items()}, str(fields["cwd"]))


def start_vars(env: Mapping[str, str]) -> dict[str, str]:
    """The variables of `env` that act on how an interpreter starts."""
    return {k: v for k, v in env.items() if k.startswith(START_PREFIXES) or k in START_VARS}


def plan(argv: Sequence[Any], kwargs: Mapping[str, Any], *, executable: str,
         zygote_env: Mapping[str, str], environ: Mapping[str, str],
         cwd: str) -> WarmRequest | str:
    """The warm request for a `Popen(argv, **kwargs)`, or why it must start cold.

    `executable` is this Python (`sys.executable`), `zygote_env` the environment the zygote
    started with, `environ` and `cwd` this process's (a start that names neither inherits
    them)."""
    words = [os.fsdecode(a) if isinstance(a, (str, bytes, os.PathLike)) else None
             for a in argv]
    if len(words) < 3 or any(w is None for w in words):
        return "not a python -m/-c command"
    program, flag, target, *args = [str(w) for w in words]
    if not same_interpreter(program, executable):
        return "another program"
    if flag not in ("-m", "-c"):
        return f"python {flag}, not -m/-c"
    if not kwargs.get("start_new_session"):
        return "not in a session of its own"
    for name, clean in CLEAN_KWARGS.items():
        value = kwargs.get(name, clean)
        if value != clean and not (name == "pass_fds" and not value):
            return f"{name}={value!r}"
    env = dict(environ if kwargs.get("env") is None else kwargs["env"])
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        return "an environment of bytes"
    if start_vars(env) != start_vars(zygote_env):
        differ = sorted(set(start_vars(env).items()) ^ set(start_vars(zygote_env).items()))
        return f"interpreter settings differ ({', '.join(sorted({k for k, _ in differ}))})"
    where = os.fsdecode(kwargs["cwd"]) if kwargs.get("cwd") is not None else cwd
    if not os.path.isdir(where):
        return "its working directory does not exist"
    request = WarmRequest("module" if flag == "-m" else "code", target, args, env,
                          os.path.abspath(where))
    if len(request.encode()) > MAX_REQUEST:
        return "a request too big for the zygote's socket"
    return request


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
