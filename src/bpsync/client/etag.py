"""A small in-memory ETag cache for GETs: send `If-None-Match`, serve the cached body on 304.

Entries are keyed by the credential's identity (a hash, never the secret) and the full URL, so two
profiles never see each other's data. Bounded by entry count and body size; least recently used
entries go first. Kept in memory only: response bodies are organisation data."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass


@dataclass(frozen=True)
class CachedResponse:
    etag: str
    content: bytes
    content_type: str


class ETagCache:
    def __init__(self, max_entries: int = 256, max_body_bytes: int = 1 << 20) -> None:
        self.max_entries = max_entries
        self.max_body_bytes = max_body_bytes
        self._entries: OrderedDict[tuple[str, str], CachedResponse] = OrderedDict()
        self.hits = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, identity: str, url: str) -> CachedResponse | None:
        entry = self._entries.get((identity, url))
        if entry is not None:
            self._entries.move_to_end((identity, url))
        return entry

    def store(self, identity: str, url: str, etag: str | None, content: bytes, ctype: str) -> None:
        key = (identity, url)
        if not etag or len(content) > self.max_body_bytes:
            self._entries.pop(key, None)
            return
        self._entries[key] = CachedResponse(etag, content, ctype)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def hit(self, identity: str, url: str) -> CachedResponse | None:
        """The entry to serve for a 304 (counted)."""
        entry = self.get(identity, url)
        if entry is not None:
            self.hits += 1
        return entry

    def clear(self) -> None:
        self._entries.clear()
