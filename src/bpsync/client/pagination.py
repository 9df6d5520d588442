"""Lists: one page on `await`, every item lazily on `async for` (pages are fetched as needed)."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from bpsync.client.models import Meta

T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    meta: Meta

    @property
    def has_next(self) -> bool:
        return self.meta.page < self.meta.total_pages

    def __iter__(self) -> Any:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


FetchPage = Callable[[int, int], Awaitable[Page[T]]]


class AsyncPaginator(Generic[T]):
    """`await p` gives the first page (or the page asked for); `async for item in p` walks every
    item from that page on; `p.pages()` yields whole pages."""

    def __init__(
        self, fetch: FetchPage[T], *, page: int = 1, per_page: int = 50, max_per_page: int = 200
    ) -> None:
        if page < 1 or not 1 <= per_page <= max_per_page:
            raise ValueError(f"page must be >= 1 and per_page within 1..{max_per_page}")
        self._fetch = fetch
        self.page = page
        self.per_page = per_page

    def __await__(self) -> Generator[Any, None, Page[T]]:
        return self._fetch(self.page, self.per_page).__await__()

    async def pages(self, *, ahead: int = 0) -> AsyncIterator[Page[T]]:
        """The pages in order. With `ahead`, once the first page tells how many there are, up to
        that many of the next pages are requested at once (still yielded in order): a list of
        several pages then costs two round trips, not one per page."""
        number = self.page
        page = await self._fetch(number, self.per_page)
        yield page
        if ahead < 1:
            while page.items and page.has_next:
                number += 1
                page = await self._fetch(number, self.per_page)
                yield page
            return
        last, asked = page.meta.total_pages, number
        waiting: deque[asyncio.Future[Page[T]]] = deque()
        try:
            while page.items:
                while len(waiting) < ahead and asked < last:
                    asked += 1
                    waiting.append(asyncio.ensure_future(self._fetch(asked, self.per_page)))
                if not waiting:
                    return
                page = await waiting.popleft()
                yield page
                last = max(last, page.meta.total_pages)  # the list may have grown meanwhile
        finally:
            for future in waiting:
                future.cancel()
            await asyncio.gather(*waiting, return_exceptions=True)

    async def __aiter__(self) -> AsyncIterator[T]:
        async for page in self.pages():
            for item in page.items:
                yield item

    async def to_list(self, limit: int | None = None) -> list[T]:
        items: list[T] = []
        async for item in self:
            items.append(item)
            if limit is not None and len(items) >= limit:
                break
        return items
