"""A tool server that exits before it writes its port is reported at once, named by its
toolset, module, exit code and last log line; one that wrote its port is never reported;
an episode that waits on a dead one is cut short (fake processes: no process starts)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from vfcheck._host.tool_servers import DeadToolServer, until_dead_server, watch


class FakeServer:
    """What `watch` reads of asyncio's `Process`: `returncode`, set when it "exits"."""

    def __init__(self) -> None:
        self.returncode: int | None = None


def test_the_message_names_the_toolset_module_exit_code_and_cause() -> None:
    silent = DeadToolServer("vfc_x", 0, "", toolset="calc")
    assert silent.message().startswith(
        "the `calc` toolset's server `python -m vfc_x` exited with code 0 before it reported "
        "its port, writing nothing; likely cause: the module has no `if __name__ == ")
    assert silent.short() == ("the `calc` toolset's server `python -m vfc_x` exited with code "
                              "0 without serving")
    loud = DeadToolServer("vfc_x", 1, "Traceback ...\nKeyError: 'CALC_TOKEN'\n\n")
    assert loud.last_line == "KeyError: 'CALC_TOKEN'"
    assert "its last line: \"KeyError: 'CALC_TOKEN'\"" in loud.message()
    assert "likely cause" not in loud.message()


async def test_an_exit_before_the_port_file_is_reported_with_the_log(tmp_path: Path) -> None:
    from vfcheck._host.tool_servers import watching

    log, port_file = tmp_path / "vf_tool_calc.log", tmp_path / "port"
    log.write_text("starting\nSystemExit: no token\n")
    seen: list[DeadToolServer] = []
    server = FakeServer()
    with log.open("rb") as out, watching(seen.append):
        watch(server, ["python", "-m", "vfc_x"], {"env": {"MCP_PORT_FILE": str(port_file)},
                                                  "stdout": out})
        await asyncio.sleep(0.1)
        assert seen == []  # still starting
        server.returncode = 1
        await asyncio.sleep(0.2)
    assert seen == [DeadToolServer("vfc_x", 1, "starting\nSystemExit: no token\n", "calc")]


async def test_a_server_that_wrote_its_port_is_not_reported(tmp_path: Path) -> None:
    from vfcheck._host.tool_servers import watching

    port_file = tmp_path / "port"
    seen: list[DeadToolServer] = []
    server = FakeServer()
    with watching(seen.append):
        watch(server, ["python", "-m", "vfc_x"], {"env": {"MCP_PORT_FILE": str(port_file)}})
        port_file.write_text("41234")
        await asyncio.sleep(0.2)
        server.returncode = 0  # stopped later, after serving
        await asyncio.sleep(0.2)
    assert seen == []


async def test_other_processes_and_unwatched_starts_are_left_alone(tmp_path: Path) -> None:
    from vfcheck._host.tool_servers import watching

    seen: list[DeadToolServer] = []
    server = FakeServer()
    server.returncode = 0
    with watching(seen.append):  # no port file: a harness program, a probe
        watch(server, ["python", "-c", "pass"], {"env": {}})
    watch(server, ["python", "-m", "vfc_x"], {"env": {"MCP_PORT_FILE": str(tmp_path / "p")}})
    await asyncio.sleep(0.2)
    assert seen == []


async def test_an_episode_waiting_on_a_dead_server_is_cut_short(tmp_path: Path) -> None:
    server = FakeServer()
    cancelled = asyncio.Event()

    async def episode() -> str:
        watch(server, ["python", "-m", "vfc_x"],
              {"env": {"MCP_PORT_FILE": str(tmp_path / "port")}})
        try:
            await asyncio.sleep(180)  # verifiers polling the port file
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "played"

    async def exit_soon() -> None:
        await asyncio.sleep(0.1)
        server.returncode = 0

    done, dead = (await asyncio.gather(until_dead_server(episode()), exit_soon()))[0]
    assert done is None and dead is not None and dead.module == "vfc_x"
    assert cancelled.is_set()
    assert await until_dead_server(asyncio.sleep(0, "finished")) == ("finished", None)

