"""Which starts are warm (`vfcheck._host.warm_plan.plan`), the request's encoding, the
exit codes a warm child copies from the interpreter, and the `starts:` line."""

from __future__ import annotations

import sys

import pytest

from vfcheck._host.warm_plan import WarmRequest, exit_code, plan, start_vars, starts_line
from vfcheck._isolation.events import merged_starts

PY = sys.executable
ENV = {"PATH": "/usr/bin", "PYTHONPATH": "/startup:/envs", "VFCHECK_CHILD_SOCKETS": "/log",
       "HOME": "/home/x"}
RUNTIME = {"start_new_session": True, "env": {**ENV, "VF_CONFIG": "{}"}}


def decide(argv: list[str], **kwargs: object) -> WarmRequest | str:
    given = {**RUNTIME, **kwargs}
    return plan(argv, given, executable=PY, zygote_env=ENV, environ=ENV, cwd="/")


def test_a_tool_server_of_the_subprocess_runtime_is_warm(tmp_path):
    request = decide([PY, "-m", "my_env", "--x"], cwd=tmp_path)
    assert isinstance(request, WarmRequest)
    assert (request.kind, request.target, request.args, request.cwd) == (
        "module", "my_env", ["--x"], str(tmp_path))
    assert request.env["VF_CONFIG"] == "{}"  # exactly the environment asked for
    assert request.argv == ["python", "-m", "my_env", "--x"]


def test_the_probe_is_warm():
    request = decide([PY, "-c", "import sys; sys.exit(0)", "http://127.0.0.1:1/mcp"])
    assert isinstance(request, WarmRequest) and request.kind == "code"
    assert request.args == ["http://127.0.0.1:1/mcp"]


@pytest.mark.parametrize(("argv", "kwargs", "why"), [
    (["uv", "run", "x"], {}, "another program"),
    (["true"], {}, "not a python -m/-c command"),
    (["/usr/bin/env", "-m", "x"], {}, "another program"),
    ([PY, "-u", "-m", "x"], {}, "python -u, not -m/-c"),
    ([PY, "script.py", "a"], {}, "python script.py, not -m/-c"),
    ([PY, "-m"], {}, "not a python -m/-c command"),
    ([PY, "-m", "x"], {"start_new_session": False}, "not in a session of its own"),
    ([PY, "-m", "x"], {"preexec_fn": print}, "preexec_fn="),
    ([PY, "-m", "x"], {"pass_fds": (5,)}, "pass_fds=(5,)"),
    ([PY, "-m", "x"], {"executable": "/bin/sh"}, "executable="),
    ([PY, "-m", "x"], {"env": {**ENV, "PYTHONHASHSEED": "3"}},
     "interpreter settings differ (PYTHONHASHSEED)"),
    ([PY, "-m", "x"], {"env": {"PATH": "/usr/bin"}}, "interpreter settings differ"),
    ([PY, "-m", "x"], {"cwd": "/no/such/dir"}, "its working directory does not exist"),
])
def test_anything_else_starts_cold_and_says_why(argv, kwargs, why):
    decision = decide(argv, **kwargs)
    assert isinstance(decision, str) and decision.startswith(why)


def test_another_venvs_python_starts_cold_though_it_links_to_this_one(tmp_path):
    """A uv script's venv: its bin/python links to the same base interpreter as ours, but
    its packages are its own, so a fork of the zygote (ours) would be another process."""
    ours, theirs = tmp_path / "ours" / "bin", tmp_path / "theirs" / "bin"
    for folder in (ours, theirs):
        folder.mkdir(parents=True)
        (folder / "python").symlink_to(PY)
    (ours / "python3").symlink_to(PY)
    mine = str(ours / "python")

    def decided(program):
        return plan([program, "-m", "x"], RUNTIME, executable=mine, zygote_env=ENV,
                    environ=ENV, cwd="/")

    assert decided(str(theirs / "python")) == "another program"
    assert isinstance(decided(str(ours / "python3")), WarmRequest)
    assert isinstance(decided(mine), WarmRequest)


def test_no_env_given_means_this_process_environment():
    request = plan([PY, "-m", "x"], {"start_new_session": True}, executable=PY,
                   zygote_env=ENV, environ=ENV, cwd="/")
    assert isinstance(request, WarmRequest) and request.env == ENV
    other = plan([PY, "-m", "x"], {"start_new_session": True}, executable=PY,
                 zygote_env=ENV, environ={**ENV, "PYTHONPATH": "/other"}, cwd="/")
    assert other == "interpreter settings differ (PYTHONPATH)"


def test_a_request_too_big_for_the_socket_starts_cold():
    decision = decide([PY, "-c", "x" * (2 << 20)])
    assert decision == "a request too big for the zygote's socket"


def test_start_vars_are_the_interpreter_and_guard_settings():
    assert start_vars({**ENV, "LANG": "C", "VF_CONFIG": "{}", "PYTHONHASHSEED": "1"}) == {
        "PYTHONPATH": "/startup:/envs", "VFCHECK_CHILD_SOCKETS": "/log", "LANG": "C",
        "PYTHONHASHSEED": "1"}


def test_a_request_round_trips():
    request = WarmRequest("code", "print('é')", ["a b", ""], {"K": "v=1"}, "/tmp")
    assert WarmRequest.decode(request.encode()) == request


@pytest.mark.parametrize(("code", "expected"), [
    (None, (0, None)), (0, (0, None)), (3, (3, None)), (256, (0, None)), (-1, (255, None)),
    (True, (1, None)), ("bye", (1, "bye")), (1.5, (1, "1.5")),
])
def test_exit_codes_follow_the_interpreter(code, expected):
    assert exit_code(code) == expected


def test_the_starts_line_says_how_processes_started():
    summary = {"warm": 12, "cold": 3, "reasons": {"another program": 2,
                                                   "not in a session of its own": 1},
               "seconds": {"warm": 1.25, "cold": 40.0}, "zygote": "ready"}
    assert starts_line(summary) == (
        "starts: 12 warm (forked from a warm interpreter), 3 cold (2 another program, 1 not "
        "in a session of its own); tool servers listening after 1.2s warm, 40.0s cold")
    off = {"warm": 0, "cold": 4, "reasons": {"warm starts are off (--cold-starts)": 4},
           "zygote": "warm starts are off (--cold-starts)"}
    assert starts_line(off) == ("starts: 0 warm (forked from a warm interpreter), 4 cold (4 "
                                "warm starts are off (--cold-starts))")
    dead = {"warm": 0, "cold": 1, "reasons": {"another program": 1},
            "zygote": "the warm interpreter is not usable: 2 threads"}
    assert starts_line(dead).endswith(
        "; warm starts unused: the warm interpreter is not usable: 2 threads")


def test_a_restarted_worker_adds_its_starts():
    first = {"warm": 2, "cold": 1, "reasons": {"x": 1}, "seconds": {"warm": 1.0},
             "zygote": "ready", "port_files": ["a"]}
    both = merged_starts(merged_starts({}, first), {**first, "port_files": ["b"]})
    assert both == {"warm": 4, "cold": 2, "reasons": {"x": 2}, "seconds": {"warm": 2.0},
                    "zygote": "ready", "port_files": ["a", "b"]}


def test_a_harness_program_in_another_interpreter_is_a_script_request(tmp_path):
    """`python prog.py ...` with a Python named by its path (a uv script's interpreter):
    a request for that interpreter's own zygote, whatever its start variables."""
    program = tmp_path / "prog.py"
    program.write_text("print(1)\n")
    theirs = tmp_path / "venv" / "bin" / "python3.12"
    theirs.parent.mkdir(parents=True)
    theirs.symlink_to(PY)
    request = decide([str(theirs), "prog.py", "--base-url=x"], cwd=tmp_path,
                     env={"PYTHONPATH": "/other"})
    assert isinstance(request, WarmRequest)
    assert (request.kind, request.python, request.target, request.args) == (
        "script", str(theirs), "prog.py", ["--base-url=x"])
    assert request.argv == ["python", "prog.py", "--base-url=x"]
    assert WarmRequest.decode(request.encode()) == request


@pytest.mark.parametrize(("argv", "why"), [
    (["python", "prog.py"], "not a python -m/-c command"),  # which python: not named by path
    ([PY, "missing.py"], "not a python -m/-c command"),
    ([PY, "-u", "prog.py"], "python -u, not -m/-c"),
    (["/bin/sh", "prog.py"], "not a python -m/-c command"),
])
def test_a_script_start_needs_a_python_by_path_and_an_existing_file(tmp_path, argv, why):
    (tmp_path / "prog.py").write_text("")
    decision = decide(argv, cwd=tmp_path)
    assert decision == why


def test_a_script_start_keeps_the_other_rules(tmp_path):
    (tmp_path / "prog.py").write_text("")
    assert decide([PY, "prog.py"], cwd=tmp_path, start_new_session=False) == (
        "not in a session of its own")
    assert str(decide([PY, "prog.py"], cwd=tmp_path, preexec_fn=print)).startswith("preexec_fn=")


def test_one_zygote_per_interpreter_script_and_environment(tmp_path):
    from vfcheck._host.warm_plan import script_key

    (tmp_path / "prog.py").write_text("")

    def key(**env: str) -> str:
        request = decide([PY, "prog.py", "--n=1"], cwd=tmp_path, env={"A": "1", **env})
        assert isinstance(request, WarmRequest)
        return script_key(request)

    assert key() == key()
    assert key() != key(B="2")


def test_verifiers_activated_start_is_a_script_request_to_resolve(tmp_path):
    """`prepare_uv_script(activate=True)`: a shell that sets four variables and execs the
    interpreter; the request keeps the shell, to ask it for the environment it gives."""
    from vfcheck._host.warm_plan import ACTIVATE

    (tmp_path / "prog.py").write_text("")
    shell = ["sh", "-c", ACTIVATE, "uv-script", "/venv"]
    request = decide([*shell, PY, "prog.py", "--n=1"], cwd=tmp_path)
    assert isinstance(request, WarmRequest)
    assert (request.kind, request.python, request.target, request.args, request.activation) == (
        "script", PY, "prog.py", ["--n=1"], shell)
    assert "activation" not in request.encode().decode()  # resolved before it is sent
    assert decide(["sh", "-c", ACTIVATE + " ", "uv-script", "/venv", PY, "prog.py"],
                  cwd=tmp_path) == "another program"  # only the command vfcheck knows
    assert decide([*shell, "/usr/bin/node", "prog.py"], cwd=tmp_path) == "another program"


def test_the_working_directory_variables_stay_out_of_the_zygotes_key(tmp_path):
    from vfcheck._host.warm_plan import script_key

    (tmp_path / "prog.py").write_text("")

    def key(pwd: str) -> str:
        request = decide([PY, "prog.py"], cwd=tmp_path, env={"A": "1", "PWD": pwd})
        assert isinstance(request, WarmRequest)
        return script_key(request)

    assert key("/work/episode-1") == key("/work/episode-2")
