"""How a Green Button feed's entries belong together, as ESPI links them.

An ESPI feed is a flat list of Atom entries; a MeterReading belongs to a UsagePoint, an
IntervalBlock to a MeterReading, and a MeterReading names its ReadingType, only through the
entries' `self`, `up` and `related` links. Real feeds write those hrefs absolute
(`https://…/resource/ReadingType/07`), rooted (`/v1/ReadingType/0`) or relative to the feed
(`ReadingType/07`), point a UsagePoint's `related` at the collection (`…/MeterReading`) or
straight at the entry (`…/MeterReading/1`), and sometimes disagree in a path segment the links
still tie together (a UsagePoint `User/1111111/…` whose MeterReading collection is
`User/11111111/…`). Hrefs are resolved against the feed's own `self` link, then matched as ESPI
does: a child's `up` (or `self`) is one of its parent's `related` links, or the parent's `self`
is a path prefix of the child's. Only when no link ties an entry to a parent does the id in the
path (`UsagePoint/<id>`) decide, and with a single candidate the feed is unambiguous."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar
from urllib.parse import urljoin

from bpsync.ingest.problems import IngestError, Where

ATOM = "{http://www.w3.org/2005/Atom}"


def local_name(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def child(el: ET.Element | None, name: str) -> ET.Element | None:
    if el is None:
        return None
    for c in el:
        if local_name(c.tag) == name:
            return c
    return None


def text(el: ET.Element | None, name: str) -> str | None:
    c = child(el, name)
    return c.text.strip() if c is not None and c.text and c.text.strip() else None


def integer(el: ET.Element | None, name: str, default: int | None = None) -> int | None:
    raw = text(el, name)
    try:
        return int(raw) if raw is not None else default
    except ValueError:
        return default


@dataclass
class Links:
    """An entry's links, resolved against the feed's base."""

    self: str = ""
    up: str = ""
    related: list[str] = field(default_factory=list)

    def all(self) -> list[str]:
        return [h for h in (self.self, self.up, *self.related) if h]

    def ident(self, kind: str) -> str | None:
        """The last `<kind>/<id>` of the entry's own href (`MeterReading/01` → `01`)."""
        return path_id(self.self, kind) or path_id(self.up, kind)


def path_id(href: str, kind: str) -> str | None:
    found = re.findall(rf"(?:^|/){kind}/([^/?#]+)", href)
    return found[-1] if found else None


@dataclass
class Node:
    """One entry the reader keeps: its links and what it says."""

    kind: str
    links: Links
    title: str | None = None
    order: int = 0


T = TypeVar("T")


@dataclass
class Linked(Generic[T]):
    node: Node
    value: T


def belongs(child_links: Links, parent: Links) -> bool:
    """The child's up or self is among the parent's related links, the parent's self among the
    child's related links, or the parent's self is a path prefix of the child's own hrefs."""
    if (child_links.up and child_links.up in parent.related) or (
        child_links.self and child_links.self in parent.related
    ):
        return True
    if parent.self and parent.self in child_links.related:
        return True
    prefix = parent.self.rstrip("/") + "/" if parent.self else None
    return bool(prefix) and any(
        h.startswith(prefix)  # type: ignore[arg-type]
        for h in (child_links.self, child_links.up)
        if h
    )


def parent_of(child_links: Links, parents: list[Linked[T]], kind: str) -> Linked[T] | None:
    """The parent the child's links name; else the one whose `<kind>/<id>` the child's own
    path carries; else the only one there is."""
    linked = [p for p in parents if belongs(child_links, p.node.links)]
    if linked:
        return linked[0]
    ids = {path_id(h, kind) for h in (child_links.self, child_links.up, *child_links.related)}
    ids.discard(None)
    by_id = [p for p in parents if p.node.links.ident(kind) in ids]
    if len(by_id) == 1:
        return by_id[0]
    return parents[0] if len(parents) == 1 else None


def named(hrefs: list[str], targets: list[Linked[T]], kind: str) -> Linked[T] | None:
    """The target whose self link one of `hrefs` is (a MeterReading's `related` ReadingType);
    else the one with the same trailing `<kind>/<id>`, when that is unambiguous."""
    for target in targets:
        if target.node.links.self and target.node.links.self in hrefs:
            return target
    for href in hrefs:
        ident = path_id(href, kind)
        if ident is None:
            continue
        same = [t for t in targets if path_id(t.node.links.self, kind) == ident]
        if len(same) == 1:
            return same[0]
    return None


def entries(path: Path, name: str) -> Iterator[tuple[ET.Element, list[ET.Element], Links]]:
    """(entry, the ESPI elements of its content, its resolved links) for every Atom entry,
    streaming. The base is the feed's own `self` link; `published`/`updated` written inside
    `content` (UtilityAPI) are Atom elements, not the resource."""
    base = ""
    depth = 0
    try:
        for event, el in ET.iterparse(path, events=("start", "end")):
            if event == "start":
                depth += 1
                continue
            depth -= 1
            if depth == 1 and el.tag == f"{ATOM}link" and el.get("rel") == "self":
                base = (el.get("href") or "").strip()
            if el.tag != f"{ATOM}entry":
                continue
            content = el.find(f"{ATOM}content")
            bodies = (
                [c for c in content if not c.tag.startswith(ATOM)] if content is not None else []
            )
            yield el, bodies, entry_links(el, base)
            el.clear()
    except ET.ParseError as exc:
        raise IngestError(f"not well-formed XML ({exc})", where=Where(name)) from None


def entry_links(entry: ET.Element, base: str) -> Links:
    links = Links()
    for link in entry.findall(f"{ATOM}link"):
        href = (link.get("href") or "").strip()
        if not href:
            continue
        href = urljoin(base, href) if base else href
        rel = link.get("rel", "")
        if rel == "self" and not links.self:
            links.self = href
        elif rel == "up" and not links.up:
            links.up = href
        elif rel == "related":
            links.related.append(href)
    return links
