"""Requests in flight to one model server at once, the user's before speculation's.

A local server (llama.cpp's `llama-server -np 1`) works on one request at a time: a second request sent
while it reads a prompt waits in the server's own queue, where tandem can no longer drop it when the user
moves on, and two requests sharing two slots halve the speed of both. So requests wait here instead, where
a superseded one leaves the queue without ever being sent, and where a request the user is waiting for goes
before any speculative one.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

USER, SPECULATIVE = 0, 1


class Slots:
    """`count` holders at once; waiters are served by priority (`USER` first), then in arrival order."""

    def __init__(self, count: int) -> None:
        self.count = count
        self._free = count
        self._waiting: list[tuple[int, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self._idle: list[asyncio.Future[None]] = []

    @property
    def busy(self) -> bool:
        return self._free == 0

    @property
    def waiting(self) -> int:
        return sum(1 for _, _, future in self._waiting if not future.done())

    async def idle(self) -> None:
        """Return once no request holds a slot or waits for one."""
        if self._free < self.count or self.waiting:
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._idle.append(future)
            await future

    @asynccontextmanager
    async def hold(self, priority: int = USER) -> AsyncIterator[None]:
        if self._free > 0 and not self.waiting:
            self._free -= 1
        else:
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            heapq.heappush(self._waiting, (priority, next(self._order), future))
            try:
                await future
            except asyncio.CancelledError:
                if future.done() and not future.cancelled():
                    self._release()  # handed the slot as it was cancelled: pass it on
                raise
        try:
            yield
        finally:
            self._release()

    def _release(self) -> None:
        while self._waiting:
            _, _, future = heapq.heappop(self._waiting)
            if not future.done():
                future.set_result(None)
                return
        self._free += 1
        if self._free == self.count:
            idle, self._idle = self._idle, []
            for waiter in idle:
                if not waiter.done():
                    waiter.set_result(None)
