"""An env served as trainers scale it: verifiers' `EnvServerPool` broker over env-server worker
processes, each running `serve_env` (`verifiers/v1/serve/pool.py`), played through an
`EnvClient` on 127.0.0.1.

prime-rl plays groups of rollouts at once through such a pool. Its workers are processes of
their own (`multiprocessing`, spawn): they rebuild the env from its config alone
(`env_config_data` -> `resolve_env_config` -> `load_environment`) and never call `load()`,
so whatever `load()` or anything else left in the client's process (a module-level cache,
a class attribute) is not there. vfcheck's lone `EnvServer` runs in the check worker, where
the env was loaded, and so cannot see that.

The broker runs on the check worker's loop (what `serve_env` runs in a process of its own
for a trainer: the same class and protocol, one interpreter fewer to start); the workers
are verifiers' own. They are below the check worker: the env's offline config travels in
the config (subprocess runtime, the fast tier's harness), the process environment (offline
flags, HOME, the socket guard) is inherited, and the scripted model is reached on loopback
(`forward_model`, run first in each worker as `serve_env`'s `log_setup`). Closing the pool
stops the workers and waits for them without blocking the loop; their tool servers' port
files go with them (`worker_setup`).

Nothing here imports verifiers at module import.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import contextvars
import functools
from collections.abc import AsyncIterator, Callable
from typing import Any

from vfcheck._episodes.served import START_WAIT, ServedEnv

ADDRESS = "tcp://127.0.0.1:0"
POOL_WORKERS = 2
"""Env-server worker processes: two, the fewest that makes a pool (least-busy dispatch sends
a group's rollouts to both)."""
STOP_WAIT = 15.0
"""Seconds the workers get to end after SIGTERM (their `env.serving()` closes its runtimes),
before they are killed."""


def pool_missing() -> str | None:
    """What of verifiers' pool the `served.pool` check uses and this verifiers lacks."""
    try:
        from verifiers.v1.configs import serve as serve_config
        from verifiers.v1.serve import pool
    except ImportError as e:
        return f"verifiers.v1.serve.pool ({e})"
    needs = {"serve.pool.EnvServerPool": hasattr(pool, "EnvServerPool"),
             "EnvServerPool._worker_path": hasattr(getattr(pool, "EnvServerPool", None),
                                                   "_worker_path"),
             "serve.pool.serve_env": hasattr(pool, "serve_env"),
             "serve.pool.env_config_data": hasattr(pool, "env_config_data"),
             "configs.serve.pool_serve_kwargs": hasattr(serve_config, "pool_serve_kwargs"),
             "configs.serve.StaticPoolConfig": hasattr(serve_config, "StaticPoolConfig")}
    missing = [name for name, there in needs.items() if not there]
    return ", ".join(missing) or None


def worker_setup(model_url: str) -> None:
    """What each pool worker runs first (`serve_env`'s `log_setup`): the scripted model on
    loopback answers its model and judge calls, and the port files its tool servers are
    given go when it exits (verifiers never removes them: `vfcheck._host.port_files`)."""
    from vfcheck._host.port_files import PORT_FILES
    from vfcheck._host.warm_starts import WARM
    from vfcheck._model.transports import forward_model

    forward_model(model_url)
    WARM.off("a pool worker starts its tool servers cold")  # notes their port files
    atexit.register(PORT_FILES.remove)


class PooledEnv(ServedEnv):
    """`ServedEnv`'s plays, through a pool of `workers` env-server processes: verifiers'
    `EnvServerPool`, built and run on first use."""

    def __init__(self, make_pool: Callable[[], Any], workers: int) -> None:
        super().__init__(server=None, refusal=None)
        self.make_pool = make_pool
        self.pool: Any | None = None
        self.workers = workers
        self.start_error: str | None = None
        """Why the pool did not come up (every later play is told the same)."""
        self.users = 0

    @property
    def address(self) -> str:
        return str(self.pool.address) if self.pool is not None else ""

    def where(self) -> dict[str, Any]:
        """The pool's address and socket folder, for a finding's details."""
        return {"address": self.address,
                "pool_dir": getattr(self.pool, "_ipc_dir", None) if self.pool else None}

    @classmethod
    @contextlib.asynccontextmanager
    async def open_pool(cls, env: Any, model: Any, workers: int = POOL_WORKERS
                        ) -> AsyncIterator[PooledEnv]:
        """The env's pool (started on first use), its workers reaching `model` (a
        `ScriptedModel`) on a loopback server of its own; on exit the workers are stopped."""
        from verifiers.v1.configs.serve import StaticPoolConfig, pool_serve_kwargs
        from verifiers.v1.serve.pool import EnvServerPool, env_config_data

        async with model.serve() as url:
            sizing = pool_serve_kwargs(StaticPoolConfig(num_workers=workers))
            pooled = cls(functools.partial(
                EnvServerPool, {"config_data": env_config_data(env.config)}, address=ADDRESS,
                log_setup=functools.partial(worker_setup, url), **sizing), workers)
            try:
                yield pooled
            finally:
                await pooled.close()

    async def start(self) -> None:
        """Build the pool and run its broker on this loop (it spawns the workers), then wait
        until each worker answers `health` on its own address (the broker answers it for
        them otherwise): the workers' start (an interpreter each, importing verifiers and
        the env) is not a play's. Raises naming a worker that exited first."""
        async with self._start_lock:
            if self.start_error is not None:
                raise RuntimeError(self.start_error)
            if self._serving is not None:
                if self._serving.done():
                    raise RuntimeError(f"the env-server pool stopped: {self._ended()}")
                return
            self.pool = self.make_pool()
            self._serving = contextvars.Context().run(asyncio.ensure_future, self.pool.run())
            try:
                while len(self.pool.workers) < self.workers and not self._serving.done():
                    await asyncio.sleep(0.01)
                await self.workers_up()
            except Exception as e:
                self.start_error = " ".join(str(e).split()) or type(e).__name__
                raise

    async def workers_up(self) -> None:
        from verifiers.v1.serve import EnvClient

        assert self._serving is not None and self.pool is not None
        for worker in self.pool.workers:
            client = EnvClient(f"ipc://{self.pool._worker_path(worker['index'])}")
            self._clients.append(client)
            healthy = asyncio.ensure_future(client.wait_for_server_startup(
                timeout=START_WAIT, interval=0.1))
            while not healthy.done():
                process = worker["process"]
                if process.exitcode is not None or self._serving.done():
                    healthy.cancel()
                    with contextlib.suppress(BaseException):
                        await healthy
                    raise RuntimeError(
                        f"env-server pool worker {worker['index']} (pid {process.pid}) exited "
                        f"with code {process.exitcode} before it served" if process.exitcode
                        is not None else f"the env-server pool stopped: {self._ended()}")
                await asyncio.sleep(0.05)
            healthy.result()

    @contextlib.asynccontextmanager
    async def used(self) -> AsyncIterator[None]:
        """One check's use of the pool: the last use to end stops it (a later one starts it
        again), so that the workers are gone before that check's finding is out (pytest's
        front end may stop the worker once every finding is in)."""
        self.users += 1
        try:
            yield
        finally:
            self.users -= 1
            if self.users == 0:
                await self.close()

    async def close(self) -> None:
        """Stop the workers (SIGTERM, then SIGKILL after `STOP_WAIT`), waiting without
        blocking the loop, then the broker (its own shutdown then finds them gone and
        removes its socket folder); the next `start` builds a new pool."""
        for client in self._clients:
            with contextlib.suppress(Exception):
                await client.close()
        self._clients, self._shared_client = [], None
        serving, pool = self._serving, self.pool
        self._serving, self.pool, self.start_error = None, None, None
        if serving is None or pool is None:
            return
        processes = [w["process"] for w in pool.workers]
        for process in processes:
            with contextlib.suppress(Exception):
                process.terminate()
        loop = asyncio.get_running_loop()
        until = loop.time() + STOP_WAIT
        while any(p.is_alive() for p in processes) and loop.time() < until:
            await asyncio.sleep(0.05)
        for process in processes:
            if process.is_alive():
                with contextlib.suppress(Exception):
                    process.kill()
        serving.cancel()
        with contextlib.suppress(BaseException):
            await serving
        stop_resource_tracker()


def stop_resource_tracker() -> None:
    """Stop the `multiprocessing` resource tracker the spawn start method started in this
    process (a helper process of the standard library's, not the env's): it would outlive
    the pool below the check worker."""
    from multiprocessing import resource_tracker

    stop = getattr(resource_tracker._resource_tracker, "_stop", None)
    if callable(stop):
        with contextlib.suppress(Exception):
            stop()
