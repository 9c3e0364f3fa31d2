"""Worker processes for the heavy synchronous routes (recommend, migrate, regions, estimate/*).

A recommend costs 15-70 ms of CPU holding the interpreter lock: on a thread of the service, every catalog
answer waiting meanwhile waits behind it. Here each heavy call runs in one of ``size`` pre-started worker
processes (``spawn``: a fresh interpreter, nothing of the service's threads, locks or database connections
inherited), which import gpufleet and read the catalog once at start. One call at a time per worker; a
request waits for a free one.

- **Time limit**: a call not answered within the request's limit (time waiting for a worker included) is
  answered 504, and its worker, if it was running it, is killed and replaced: unlike a thread, the work
  really stops.
- **A worker that dies** (killed, out of memory, a crash in a C extension) is replaced; the request it was
  running gets a 503 saying so, never a hang. One found dead while idle is replaced before it gets work.
- **Errors**: a :class:`~gpufleet.errors.GpufleetError` raised in the worker comes back as its status, type
  and message (the same answer as on a thread); anything else is logged by the worker (stderr, the service's
  log) and answered 500 without internals.
- **Model files**: a worker forbids model config paths for its whole life (:mod:`.sandbox`).
- **Signals**: a worker ignores SIGINT (Ctrl+C in a terminal reaches the whole process group): the service
  stops it when it stops.
- **Memory**: each worker is one thread, so glibc keeps one malloc arena there (the thread pool's many
  arenas grew the service by ~1.7 MiB/min); its estimator caches are bounded as the service's are.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import signal
import sys
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

log = logging.getLogger("gpufleet.service")

#: what a worker answers: ("ok", text) | ("error", status, type, message) | ("crash", type)
Outcome = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class WorkerSetup:
    """What a worker process is told at start."""

    estimate_cache_calls: int
    estimate_cache_configs: int
    #: the service's database, where a worker reads a refreshed catalog version it has not built yet
    db_url: str = ""


def _warm(setup: WorkerSetup) -> None:
    """Forbid model files, bound the estimator caches, import the heavy routes' code and read the catalog."""
    from gpufleet.models.registry import forbid_model_files

    forbid_model_files()  # a request's fields come over HTTP: no model config file of the server is read
    from gpufleet.catalog.offers import load_offers
    from gpufleet.recommend.candidates import limit_estimate_caches

    limit_estimate_caches(calls_max=setup.estimate_cache_calls, configs_max=setup.estimate_cache_configs)
    load_offers()
    from gpufleet.service.heavy import set_database

    set_database(setup.db_url)
    import gpufleet.estimate.memory
    import gpufleet.estimate.performance
    import gpufleet.fleet.regions
    import gpufleet.recommend.api
    import gpufleet.report  # noqa: F401


def outcome(fn: Callable[..., str], args: tuple[Any, ...]) -> Outcome:
    """``fn(*args)`` as a picklable outcome (a user error carries its HTTP status, type and message)."""
    from gpufleet.errors import GpufleetError
    from gpufleet.service.errors import http_status

    try:
        return ("ok", fn(*args))
    except GpufleetError as exc:
        return ("error", http_status(exc), type(exc).__name__, str(exc))
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        return ("crash", type(exc).__name__)


def worker_main(conn: Connection, setup: WorkerSetup) -> None:
    """A worker's life: warm up, then answer one call per message until the service closes the pipe."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _warm(setup)
    while True:
        try:
            fn, args = conn.recv()
        except (EOFError, OSError):  # the service is gone or closed the pipe
            return
        except Exception as exc:  # a call that cannot be unpickled here: answered, the worker lives on
            traceback.print_exc(file=sys.stderr)
            conn.send(("crash", type(exc).__name__))
            continue
        conn.send(outcome(fn, args))


class _Late(Exception):
    """The call was not answered within its time."""


class _Worker:
    def __init__(self, setup: WorkerSetup) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        # not a daemon: a library call may start processes of its own (daemons may not)
        self.proc = ctx.Process(target=worker_main, args=(child, setup), name="gpufleet-route-worker")
        self.proc.start()
        child.close()

    def call(self, fn: Callable[..., str], args: tuple[Any, ...], timeout_s: float) -> Outcome:
        """Blocking (on a waiting thread): send the call, wait for its outcome up to ``timeout_s`` (0: no
        limit). :class:`_Late` past it; EOFError or OSError when the worker is gone."""
        self.conn.send((fn, args))
        if not self.conn.poll(timeout_s if timeout_s > 0 else None):
            raise _Late
        out: Outcome = self.conn.recv()
        return out

    def alive(self) -> bool:
        return self.proc.is_alive()

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(5.0)
        self.conn.close()

    def stop(self, wait_s: float = 2.0) -> None:
        """Close the pipe (the worker leaves its loop), wait up to ``wait_s``, then make sure it is gone."""
        self.conn.close()
        self.proc.join(wait_s)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(5.0)


class WorkerLost(Exception):
    """The worker running the call died (replaced already)."""


class CallTimedOut(Exception):
    """The call was not answered within its time limit (its worker, if it had started, was replaced)."""


class ProcessPool:
    """``size`` worker processes, started by :meth:`start` (or the first call), one call at a time each."""

    def __init__(self, size: int, setup: WorkerSetup) -> None:
        self.size, self.setup = size, setup
        self._idle: asyncio.Queue[_Worker] | None = None
        self._all: set[_Worker] = set()
        self._threads: ThreadPoolExecutor | None = None
        #: workers started to replace one that died or was stopped [count]
        self.replaced = 0

    def start(self) -> None:
        """Start the workers (from the event loop: their queue belongs to it)."""
        if self._idle is not None:
            return
        self._idle = asyncio.Queue()
        self._threads = ThreadPoolExecutor(
            max_workers=2 * self.size, thread_name_prefix="gpufleet-route-wait"
        )
        for _ in range(self.size):
            self._idle.put_nowait(self._spawn())

    def _spawn(self) -> _Worker:
        w = _Worker(self.setup)
        self._all.add(w)
        return w

    def _replace(self, w: _Worker) -> _Worker:
        w.kill()
        self._all.discard(w)
        self.replaced += 1
        return self._spawn()

    def pids(self) -> list[int]:
        """The workers' process ids (the benchmark adds their memory and CPU to the service's)."""
        return [w.proc.pid for w in list(self._all) if w.proc.pid is not None]

    async def call(self, fn: Callable[..., str], args: tuple[Any, ...], limit_s: float) -> Outcome:
        """``fn(*args)`` in a worker; :class:`CallTimedOut` past ``limit_s`` (0: none), :class:`WorkerLost`
        when its worker died."""
        self.start()
        assert self._idle is not None and self._threads is not None
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        try:
            w = await (asyncio.wait_for(self._idle.get(), limit_s) if limit_s > 0 else self._idle.get())
        except TimeoutError:
            raise CallTimedOut from None
        if not w.alive():
            log.warning("a route worker (pid %s) had died while idle: replaced", w.proc.pid)
            w = await loop.run_in_executor(self._threads, self._replace, w)
        remaining = limit_s - (loop.time() - t0) if limit_s > 0 else 0.0
        if limit_s > 0 and remaining <= 0:
            self._give_back(w)
            raise CallTimedOut
        try:
            return await loop.run_in_executor(self._threads, w.call, fn, args, remaining)
        except _Late:
            log.warning("a route worker (pid %s) ran past the time limit: stopped and replaced", w.proc.pid)
            w = await loop.run_in_executor(self._threads, self._replace, w)  # kill and join: off the loop
            raise CallTimedOut from None
        except (EOFError, OSError) as exc:
            # its pipe closed as it died: let it be reaped for its exit code (off the event loop)
            await loop.run_in_executor(self._threads, w.proc.join, 2.0)
            code = w.proc.exitcode
            log.error("a route worker (pid %s) died (exit code %s) during a call: replaced", w.proc.pid, code)
            w = await loop.run_in_executor(self._threads, self._replace, w)
            raise WorkerLost(f"exit code {code}") from exc
        except BaseException:  # cancelled: the worker's state is unknown
            w = self._replace(w)
            raise
        finally:
            self._give_back(w)

    def _give_back(self, w: _Worker) -> None:
        if self._idle is None:  # closed meanwhile
            w.stop()
        else:
            self._idle.put_nowait(w)

    def close(self) -> None:
        """Stop every worker (a call still running gets a 503)."""
        workers, self._all = list(self._all), set()
        self._idle = None
        for w in workers:  # every worker told at once (one still warming up sees it when done) ...
            w.conn.close()
        deadline = time.monotonic() + 2.0
        for w in workers:  # ... then 2 s for all of them together before the rest are killed
            w.stop(max(0.0, deadline - time.monotonic()))
        if self._threads is not None:
            self._threads.shutdown(wait=False, cancel_futures=True)
            self._threads = None
