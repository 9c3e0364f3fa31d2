"""Where the heavy synchronous routes (recommend, migrate, regions, estimate/*) run, and their time limit.

By default in worker processes (:mod:`.pool`, ``ServiceSettings.route_processes``, min(2, CPUs)): their CPU
no longer holds the service's interpreter lock while catalog pages, tokens and the dashboard wait, and a call
past the limit is really stopped (its worker is replaced). With ``route_processes`` 0 they run on a thread
pool of their own (``heavy_route_workers`` threads), apart from the pool of every other route; a call past
the limit cannot be interrupted there and finishes on its thread, its answer discarded.

Either way, a request not answered within ``ServiceSettings.request_time_limit_s`` (time waiting for a
worker included) gets a 504 with a message saying what to do; work still waiting never starts. A worker
process that dies during a call is replaced and the request gets a 503.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fastapi.responses import JSONResponse, Response

from gpufleet.service.errors import ServiceError, TimedOut
from gpufleet.service.pool import CallTimedOut, ProcessPool, WorkerLost, WorkerSetup

log = logging.getLogger("gpufleet.service")


class WorkerDied(ServiceError):
    """The worker process computing the answer died (503 Service Unavailable)."""

    status = 503


class HeavyRoutes:
    """Runs a heavy route's computation (a function of plain values returning JSON text) in a worker process
    (``processes`` > 0) or on a thread pool of ``workers`` threads; ``limit_s`` 0: no time limit."""

    def __init__(
        self, *, workers: int, limit_s: float, processes: int = 0, setup: WorkerSetup | None = None
    ) -> None:
        self.workers, self.limit_s = workers, limit_s
        self._pool: ThreadPoolExecutor | None = None  # made on first use (again after close)
        self.processes = (
            ProcessPool(processes, setup or WorkerSetup(10_000, 8_000)) if processes > 0 else None
        )
        self.timed_out = 0

    def start(self) -> None:
        """Start the worker processes now (their warm-up overlaps the service's start)."""
        if self.processes is not None:
            self.processes.start()

    async def run(self, route: str, fn: Callable[..., str], *args: Any) -> Response:
        """``fn(*args)`` (JSON text) as the route's answer; :class:`TimedOut` (504) past the limit."""
        if self.processes is None:
            text = await self._on_thread(route, fn, args)
            return Response(text, media_type="application/json")
        try:
            out = await self.processes.call(fn, args, self.limit_s)
        except CallTimedOut:
            raise self._late(route) from None
        except WorkerLost as exc:
            raise WorkerDied(
                f"{route} was being computed by a worker process that died ({exc}); it has been replaced. "
                "Retry the request; if it fails again the same way, the request may need more memory than "
                "the service has: narrow it (fewer GPUs, providers or regions) or report it."
            ) from None
        if out[0] == "ok":
            return Response(out[1], media_type="application/json")
        if out[0] == "error":
            status, kind, message = out[1], out[2], out[3]
            if status >= 500:
                log.error("server-side data error: %s", message)
            return JSONResponse(
                {"error": {"status": status, "type": kind, "message": message}}, status_code=status
            )
        raise RuntimeError(f"{route} failed in its worker process on an internal error ({out[1]})")

    async def _on_thread(self, route: str, fn: Callable[..., str], args: tuple[Any, ...]) -> str:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="gpufleet-heavy")
        # the request's context goes with it (model files forbidden: .sandbox), as run_in_threadpool does
        ctx = contextvars.copy_context()
        fut = asyncio.get_running_loop().run_in_executor(self._pool, lambda: ctx.run(fn, *args))
        if self.limit_s <= 0:
            return await fut
        try:
            # on the timeout the future is cancelled: work still queued never starts
            return await asyncio.wait_for(fut, self.limit_s)
        except TimeoutError:
            raise self._late(route) from None

    def _late(self, route: str) -> TimedOut:
        self.timed_out += 1
        return TimedOut(
            f"{route} did not finish within the service's limit of {self.limit_s:g} s for a synchronous "
            "request, and was abandoned. Narrow the request (fewer GPUs, providers or regions, a smaller "
            "limit), or run it as a job with its own time limit (POST /api/v1/plan with a fleet of this "
            "one workload); the operator may raise the limit with `gpufleet serve "
            "--request-time-limit`."
        )

    def close(self) -> None:
        """Stop taking work; queued calls are dropped, running thread calls finish on their own, worker
        processes are stopped."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        if self.processes is not None:
            self.processes.close()
