"""The time limit of the heavy synchronous routes (recommend, migrate, regions, estimate/*).

They run on a pool of their own (``ServiceSettings.heavy_route_workers`` threads), apart from the thread pool
that answers every other route (tokens, catalog pages, jobs, the dashboard), so a burst of slow recommends
cannot starve those. A request that has not finished within ``ServiceSettings.request_time_limit_s`` (time
queued for a thread included) is answered 504 with a message saying what to do. Its work, if still queued,
is dropped; if already running it cannot be interrupted (Python threads cannot be stopped) and finishes on
its heavy thread, whose answer is discarded: at most ``heavy_route_workers`` such threads, never the
server's own pool.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from gpufleet.service.errors import TimedOut

T = TypeVar("T")


class HeavyRoutes:
    """A thread pool with a time limit per call (``limit_s`` 0: none)."""

    def __init__(self, *, workers: int, limit_s: float) -> None:
        self.workers, self.limit_s = workers, limit_s
        self._pool: ThreadPoolExecutor | None = None  # made on first use (again after close)
        self.timed_out = 0

    async def run(self, route: str, fn: Callable[[], T]) -> T:
        """``fn()`` on a heavy thread; :class:`TimedOut` (504) past the limit."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="gpufleet-heavy")
        # the request's context goes with it (model files forbidden: .sandbox), as run_in_threadpool does
        ctx = contextvars.copy_context()
        fut = asyncio.get_running_loop().run_in_executor(self._pool, ctx.run, fn)
        if self.limit_s <= 0:
            return await fut
        try:
            # on the timeout the future is cancelled: work still queued never starts
            return await asyncio.wait_for(fut, self.limit_s)
        except TimeoutError:
            self.timed_out += 1
            raise TimedOut(
                f"{route} did not finish within the service's limit of {self.limit_s:g} s for a synchronous "
                "request, and was abandoned. Narrow the request (fewer GPUs, providers or regions, a smaller "
                "limit), or run it as a job with its own time limit (POST /api/v1/plan with a fleet of this "
                "one workload); the operator may raise the limit with `gpufleet serve "
                "--request-time-limit`."
            ) from None

    def close(self) -> None:
        """Stop taking work; queued calls are dropped, running ones finish on their own."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
