"""An env served as trainers serve it: verifiers' own `EnvServer` on this process's loop, an
`EnvClient` on 127.0.0.1, each task sent as its wire data.

The served path is other code than the in-process one (`verifiers/v1/serve/`): the server
never calls `load()`, it rebuilds each task from `task.data.model_dump(mode="json")` into
the taskset's *declared* data type and Task class (`EnvServer._build_task`), and the traces
come back as deltas the client assembles into a `WireEpisode`. The server runs here, under
the in-process runner's offline config and scripted model (respx answers every httpx client
of the process, the server's upstream too), so what differs is the serve path's doing.

Nothing here imports verifiers at module import.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from vfcheck._episodes.recorder import STAGES
from vfcheck._episodes.runtime_fit import stand_in

ADDRESS = "tcp://127.0.0.1:0"
"""Loopback, on a port the OS picks (the server reads back the one it bound)."""
START_WAIT = 120.0
"""Seconds the server gets to answer its first `health` request: it answers once inside
`env.serving()`, which starts the taskset's shared tool servers (an interpreter each, which
a loaded machine makes slow)."""
REPLY_WAIT = 5.0
"""Seconds the server gets to answer a `CancelRequest` (it answers at once: a dict lookup)."""
END_WAIT = 15.0
"""Seconds a cancelled rollout gets to end (the run's reply): its runtime and harness
program stop as verifiers stops them, which a loaded machine makes slow."""
BIND_WAIT = 10.0
"""Seconds the scripted model holds a served run's first request for the delta that binds
its trace (delivered by ZMQ's I/O thread, which a loaded machine can starve)."""


class ServeMissing(Exception):
    """This verifiers lacks a part of the serve path (the message says which)."""


def serve_missing() -> str | None:
    """What of `verifiers.v1.serve` the served checks use and this verifiers lacks."""
    try:
        from verifiers.v1.serve import EnvClient, EnvServer, delta, types
    except ImportError as e:
        return f"verifiers.v1.serve ({e})"
    needs = {"EnvServer._build_task": hasattr(EnvServer, "_build_task"),
             "EnvClient._request": hasattr(EnvClient, "_request"),
             "serve.delta.EpisodeAssembly": hasattr(delta, "EpisodeAssembly"),
             "serve.types.CancelRequest": hasattr(types, "CancelRequest")}
    missing = [name for name, there in needs.items() if not there]
    return ", ".join(missing) or None


@dataclass
class WireTrip:
    """One task through the wire: what was sent, the task the server rebuilt from it, or
    why there is none (`error`, with the `step` that failed)."""

    sent: dict[str, Any] | None = None
    task: Any | None = None
    step: str = ""
    """`dump`, `encode`, `validate` (the declared data type) or `build` (the Task class)."""
    error: str | None = None
    exception: BaseException | None = field(default=None, repr=False)


def declared_types(env: Any) -> tuple[Any, Any, Any]:
    """The taskset's declared Task class, its data type and the task config the server
    wraps every task in (`EnvServer.__init__`, `_build_task`). Raises with the reason."""
    taskset_cls = type(env.taskset)
    task_cls = taskset_cls.task_type()
    data_cls = task_cls.data_type()
    return task_cls, data_cls, env.config.taskset.task


def through_the_wire(task: Any, server: Any | None, env: Any) -> WireTrip:
    """`task` as a served run gets it: dumped as the client dumps it, msgpack-encoded with
    verifiers' own encoder and decoded, then rebuilt as the server rebuilds it (`server`'s
    own `_build_task`; without a server, which refused the taskset, the same construction
    from the declared types); and the rebuilt data encoded as the server streams it back on
    each trace (`serve/delta.py`: `dump`, python mode, then `pack`)."""
    from pydantic import ValidationError
    from verifiers.v1.serve.delta import dump, pack, unpack

    trip = WireTrip()
    try:
        trip.step, trip.sent = "dump", task.data.model_dump(mode="json")
        trip.step, wire = "encode", unpack(pack(trip.sent))
        if server is not None:
            trip.step = "validate"
            trip.task = server._build_task(wire)
        else:
            task_cls, data_cls, config = declared_types(env)
            trip.step, data = "validate", data_cls.model_validate(wire)
            trip.step, trip.task = "build", task_cls(data, config)
        trip.step, streamed = "stream", trip.task.data
        pack(dump(streamed))
    except Exception as e:  # noqa: BLE001 - what fails on the wire is the observation
        if trip.step == "validate" and not isinstance(e, ValidationError):
            trip.step = "build"  # `_build_task` validates, then wraps in the Task class
        trip.error, trip.exception = one_line(e), e
        if trip.step == "stream":
            trip.error = f"{unstreamable(streamed)}{trip.error}"
    return trip


def unstreamable(data: Any) -> str:
    """`data.path (a PurePosixPath): `, the first field the server's encoder refuses."""
    from verifiers.v1.serve.delta import dump, pack

    for name, value in dump(data).items():
        try:
            pack(value)
        except Exception:  # noqa: BLE001 - the field that fails is what we look for
            return f"data.{name} (a {type(getattr(data, name, value)).__name__}): "
    return ""


def as_streamed(trace: Any) -> dict[str, Any]:
    """An in-process trace's record as a served client reads it, had the trace been sent
    whole: verifiers' own `dump` (python mode), msgpack with its encoder, `WireTrace`. The
    served record went through the same encoder, so what still differs is the serve path's
    doing, not the encoder's rendering (a datetime's `Z` becomes `+00:00` on both sides).
    The trace's own record when that fails (then the served run failed too)."""
    import verifiers.v1 as vf
    from verifiers.v1.serve.delta import dump, pack, unpack

    try:
        record: dict[str, Any] = vf.WireTrace.model_validate(unpack(pack(dump(trace)))
                                                             ).to_record()
    except Exception:  # noqa: BLE001 - compared as recorded instead
        record = trace.to_record()
    return record


def one_line(error: BaseException) -> str:
    return " ".join(f"{type(error).__name__}: {error}".split())


@dataclass
class ServedPlay:
    """One task played through the server: the assembled episode, or why there is none."""

    episode: Any | None = None
    """The `WireEpisode` `EnvClient.run` assembled."""
    error: str | None = None
    """The server's error reply, an assembly that failed, or the deadline."""
    unfinished: bool = False
    """The run got no reply within the timeout (the server named in `error`)."""
    trace_ids: list[str] = field(default_factory=list)
    unbound: bool = False
    """A model request of the play was answered before its trace was bound to the task
    (its open delta came late): the play is not the one asked for."""


@dataclass
class ServedCancel:
    """A served run cancelled mid-request with a `CancelRequest`: what the server said."""

    saw_preview: bool = False
    finished_first: str | None = None
    """How the run ended before any preview was seen (nothing was left to cancel)."""
    cancel_reply: str = ""
    """`cancelled`, `no run found`, `no reply within Ns`, or the error."""
    run_reply: str = ""
    """`cancelled` (the server's cancellation), `episode` (it finished the rollout), `error:
    <text>`, or `no reply within Ns`."""
    pending: int = 0
    """Previewed messages in what the client assembled, once the run was answered."""
    deltas_after_cancel: int = 0
    unbound: bool = False


Bind = Callable[[str, Any, Any], None]
"""`bind(trace_id, task, policy)`: ties a served trace to its task and policy on the scripted
model. Called from the trace's first delta, which the server sends at mint, before the
first model request (one that comes late is detected: `unbound`)."""


class ServedEnv:
    """An `EnvServer` for the env (or its refusal), started on first use, and its clients.

    A play takes the in-process `EnvRunner` whose model context (the scripted model's URL,
    model name, sampling) the served run gets too, and a `Bind`."""

    def __init__(self, server: Any | None, refusal: str | None) -> None:
        self.server = server
        self.refusal = refusal
        """Why the server would not serve the taskset, in its words."""
        self._serving: asyncio.Task[None] | None = None
        self._start_lock = asyncio.Lock()
        self._clients: list[Any] = []
        self._shared_client: Any | None = None
        self._in_flight = 0
        """Served runs under way: while there are, an unbound session is one of theirs."""

    @property
    def address(self) -> str:
        return str(self.server.address) if self.server is not None else ""

    @classmethod
    @contextlib.asynccontextmanager
    async def open(cls, env: Any) -> AsyncIterator[ServedEnv]:
        """Build verifiers' `EnvServer` for `env`'s config (a refusal is kept, not raised);
        on exit stop it (if it started) and close its clients."""
        from verifiers.v1.serve import EnvServer

        server, refusal = None, None
        try:
            server = EnvServer(env.config, address=ADDRESS)
        except ValueError as e:  # its refusals (an excluded field) are ValueErrors
            refusal = " ".join(str(e).split())
        served = cls(server, refusal)
        try:
            yield served
        finally:
            await served.close()

    async def start(self) -> None:
        """Run the server on this loop and wait until it answers `health`. Its tasks run in
        a context of their own: no unit or episode of vfcheck's is theirs (a served rollout
        that stalls is named by its task, not by the check that started the server)."""
        async with self._start_lock:
            if self._serving is not None:
                if self._serving.done():
                    raise RuntimeError(f"the env server stopped: {self._ended()}")
                return
            if self.server is None:
                raise RuntimeError(f"the env server refused the taskset: {self.refusal}")
            self._serving = contextvars.Context().run(
                asyncio.ensure_future, self.server.run())
            healthy = asyncio.ensure_future(self.shared_client().wait_for_server_startup(
                timeout=START_WAIT, interval=0.05))
            await asyncio.wait({healthy, self._serving}, return_when=asyncio.FIRST_COMPLETED)
            if not healthy.done():
                healthy.cancel()
                with contextlib.suppress(BaseException):
                    await healthy
                raise RuntimeError(f"the env server stopped: {self._ended()}")
            healthy.result()

    def _ended(self) -> str:
        assert self._serving is not None
        if self._serving.cancelled():
            return "cancelled"
        error = self._serving.exception()
        return one_line(error) if error is not None else "its run() returned"

    def client(self) -> Any:
        """A new `EnvClient` of the server, closed with it."""
        from verifiers.v1.serve import EnvClient

        client = EnvClient(self.address)
        self._clients.append(client)
        return client

    def shared_client(self) -> Any:
        """The client the happy plays share (one DEALER socket serves many runs)."""
        if self._shared_client is None:
            self._shared_client = self.client()
        return self._shared_client

    async def close(self) -> None:
        for client in self._clients:
            with contextlib.suppress(Exception):
                await client.close()
        if self._serving is not None:
            self._serving.cancel()
            with contextlib.suppress(BaseException):
                await self._serving
        elif self.server is not None:  # built, never run: its socket and context
            self.server.frontend.close()
            self.server.ctx.term()

    @contextlib.contextmanager
    def _running(self, runner: Any) -> Iterator[None]:
        """A served run under way: the scripted model holds the first request of a session
        not bound yet until its trace's first delta binds it (`BIND_WAIT` at most)."""
        model = runner.model
        if model is not None and model.await_binding is None:
            async def await_binding(session_id: str) -> None:
                loop = asyncio.get_running_loop()
                until = loop.time() + BIND_WAIT
                while self._in_flight and model.task_for(session_id) is None \
                        and loop.time() < until:
                    await asyncio.sleep(0.005)
            model.await_binding = await_binding
        self._in_flight += 1
        try:
            yield
        finally:
            self._in_flight -= 1

    async def play(self, runner: Any, bind: Bind, task: Any, *, timeout: float,
                   policy: Any = None) -> ServedPlay:
        """Play `task` through the server with `EnvClient.run`, bounded by `timeout`."""
        await self.start()
        play = ServedPlay()
        assembly = Assembling(binder(bind, task, policy, play.trace_ids))
        try:
            with self._running(runner):
                play.episode = await asyncio.wait_for(self.shared_client().run(
                    *request_args(runner, task), on_delta=assembly.see), timeout)
        except TimeoutError:
            play.unfinished = True
            play.error = (f"the env server at {self.address} did not answer the run within "
                          f"{timeout:g}s{assembly.where()}")
        except Exception as e:  # noqa: BLE001 - its error reply, a failed assembly: data
            play.error = " ".join(str(e).split()) if isinstance(e, RuntimeError) \
                else one_line(e)
        play.unbound = unbound(runner, play.trace_ids)
        return play

    async def cancel_mid_request(self, runner: Any, bind: Bind, task: Any, policy: Any, *,
                                 wait: float) -> ServedCancel:
        """Play `task` with `policy` (a model that hangs), send a `CancelRequest` for the run
        once a request is previewed (or after `wait` s), then wait for the server's answers:
        to the cancel (`REPLY_WAIT`) and to the run itself (`END_WAIT`)."""
        await self.start()
        opened: list[str] = []
        assembly = Assembling(binder(bind, task, policy, opened))
        client = self.client()  # its own: the one run in flight on it is the one to cancel
        try:
            with self._running(runner):
                result = await self._cancel(client, assembly, runner, task, wait)
            result.unbound = unbound(runner, opened)
            return result
        finally:
            self._clients.remove(client)
            with contextlib.suppress(Exception):
                await client.close()

    async def _cancel(self, client: Any, assembly: Assembling, runner: Any, task: Any,
                      wait: float) -> ServedCancel:
        from verifiers.v1.serve.types import CancelRequest, CancelResponse

        result = ServedCancel()
        run = asyncio.ensure_future(
            client.run(*request_args(runner, task), on_delta=assembly.see))
        loop = asyncio.get_running_loop()
        until = loop.time() + wait
        while loop.time() < until and not run.done() and not assembly.pending():
            await asyncio.sleep(0.02)
        result.saw_preview = assembly.pending() > 0
        if run.done():
            result.finished_first = reply_of(run)
            return result
        request_ids = list(getattr(client, "_deltas", None) or ())
        if len(request_ids) != 1:  # EnvClient keeps a run's delta handler by request id
            run.cancel()
            with contextlib.suppress(BaseException):
                await run
            raise ServeMissing("EnvClient._deltas (the run's wire request id)")
        sent_at = assembly.count
        try:
            answer = await client._request(CancelRequest(request_id=request_ids[0]),
                                           CancelResponse, timeout=REPLY_WAIT)
            result.cancel_reply = "cancelled" if answer.cancelled else "no run found"
        except TimeoutError:
            result.cancel_reply = f"no reply within {REPLY_WAIT:g}s"
        except Exception as e:  # noqa: BLE001 - the server's error reply is the observation
            result.cancel_reply = one_line(e)
        done, _ = await asyncio.wait({run}, timeout=END_WAIT)
        if run in done:
            result.run_reply = reply_of(run)
        else:
            result.run_reply = f"no reply within {END_WAIT:g}s"
            run.cancel()  # the client's own fire-and-forget cancel follows
            with contextlib.suppress(BaseException):
                await run
        result.pending = assembly.pending()
        result.deltas_after_cancel = assembly.count - sent_at
        return result


def request_args(runner: Any, task: Any) -> tuple[Any, str, Any, dict[str, Any]]:
    """`EnvClient.run`'s arguments for `task`: the in-process runner's model context (same
    endpoint, model name and sampling) and the task's data as trainers send it (with the
    offline stand-in for a network policy: `vfcheck._episodes.runtime_fit`)."""
    ctx = runner.ctx
    return ctx.client, ctx.model, ctx.sampling, stand_in(task).data.model_dump(mode="json")


def binder(bind: Bind, task: Any, policy: Any, opened: list[str]
           ) -> Callable[[dict[str, Any]], None]:
    """A delta handler that binds each trace the run opens (its `open` delta), once."""
    def on_open(delta: dict[str, Any]) -> None:
        if "open" in delta and delta["trace"] not in opened:
            opened.append(delta["trace"])
            bind(delta["trace"], task, policy)
    return on_open


def unbound(runner: Any, trace_ids: list[str]) -> bool:
    """Whether the scripted model answered one of `trace_ids` before it was bound."""
    model = runner.model
    return model is not None and any(
        r.request.session_id in trace_ids and r.request.task is None for r in model.requests)


def reply_of(run: asyncio.Future[Any]) -> str:
    """How the server answered a finished `EnvClient.run`: `cancelled`, `episode` or
    `error: <its text>`."""
    if run.cancelled():
        return "cancelled by vfcheck"
    error = run.exception()
    if error is None:
        return "episode"
    text = " ".join(str(error).split())
    return "cancelled" if text.startswith("Cancelled:") else f"error: {text}"


class Assembling:
    """The client's picture of a served run, kept beside `EnvClient.run`'s own (which is
    gone once the run is cancelled): verifiers' `EpisodeAssembly` fed the same deltas."""

    def __init__(self, then: Callable[[dict[str, Any]], None]) -> None:
        from verifiers.v1.serve.delta import EpisodeAssembly

        self.assembly = EpisodeAssembly()
        self.then = then
        self.count = 0

    def see(self, delta: dict[str, Any]) -> None:
        self.count += 1
        self.assembly.apply(delta)
        self.then(delta)

    def pending(self) -> int:
        return sum(len(t.get("pending") or []) for t in self.assembly.traces.values())

    def where(self) -> str:
        """`; its last delta showed the trace in the scoring stage`: how far the run got."""
        if not self.assembly.traces:
            return "; no trace of the run was streamed"
        trace = list(self.assembly.traces.values())[-1]
        timing = trace.get("timing") or {}
        started = [s for s in STAGES if (timing.get(s) or {}).get("start")]
        if not started:
            return "; its last delta showed the trace before boot"
        stage = started[-1]
        ended = (timing.get(stage) or {}).get("end")
        return f"; its last delta showed the trace {'after' if ended else 'in'} the {stage} stage"

