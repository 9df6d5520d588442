"""Where the service may send webhooks: public addresses only (docs/decisions.md S3, S4).

A tenant chooses the URL, so without this the server would POST into its own network (SSRF):
loopback, private and link-local ranges, cloud metadata at 169.254.169.254, and every odd spelling
of them (`127.1`, `2130706433`, `0x7f000001`, `[::ffff:127.0.0.1]`). Two checks:

- `check_webhook_url` at create and update: the URL's host, when it is an address in any spelling
  or a `localhost` name, must be public. Names are not resolved here; what a name points to can
  change after the check.
- `GuardedTransport` at connect time: resolves the host, refuses the attempt if ANY address is not
  public, and connects to the checked address itself, so a DNS answer that changes between the
  check and the connection (rebinding) cannot redirect it. TLS still verifies the URL's host name.

`allow_private=True` (the `--allow-private-webhooks` setting, off by default) lifts both checks for
local testing against receivers on this machine.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

import httpcore
import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# host, port -> the addresses a connection could go to (tests inject their own answers)
Resolver = Callable[[str, int], list[str]]


class DestinationRefused(Exception):
    """The destination is not a public address. The message is safe to show the tenant: it
    says what was refused, never anything learnt from the network."""


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def parse_address(host: str) -> IPAddress | None:
    """The address a URL host names in any spelling the C resolver accepts (dotted, shortened
    `127.1`, decimal `2130706433`, hex `0x7f000001`, octal `0177.0.0.1`, bracketed IPv6 with a
    zone), or None for a name."""
    text = host.strip().rstrip(".").strip("[]")
    text = text.split("%", 1)[0]  # an IPv6 zone id names an interface, not an address
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        pass
    if not text or not all(c in "0123456789abcdefxABCDEFX." for c in text):
        return None
    try:
        # inet_aton reads the legacy forms (127.1, 2130706433, 0x7f000001, 017700000001).
        return ipaddress.IPv4Address(socket.inet_aton(text))
    except OSError:
        return None


def _embedded_v4(ip: ipaddress.IPv6Address) -> Iterable[ipaddress.IPv4Address]:
    """IPv4 addresses an IPv6 address carries (mapped, 6to4, Teredo, NAT64 well-known prefix)."""
    if ip.ipv4_mapped is not None:
        yield ip.ipv4_mapped
    if ip.sixtofour is not None:
        yield ip.sixtofour
    if ip.teredo is not None:
        yield from ip.teredo
    if ip in ipaddress.ip_network("64:ff9b::/96"):
        yield ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    # IPv4-compatible ::a.b.c.d (deprecated, still routed to the IPv4 address by some stacks)
    if int(ip) >> 32 == 0 and int(ip) > 1:
        yield ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)


def is_public(ip: IPAddress) -> bool:
    """Globally routable unicast: not loopback, private, shared (CGNAT), link-local (metadata),
    unique-local, site-local, multicast, unspecified, reserved, documentation or benchmarking."""
    if ip.is_multicast or not ip.is_global:
        return False
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.is_site_local:
            return False
        return all(is_public(v4) for v4 in _embedded_v4(ip))
    return True


def _refuse_address(host: str, ip: IPAddress) -> DestinationRefused:
    return DestinationRefused(
        f"webhook destinations must be public addresses; {host} is {_kind(ip)}"
    )


def _kind(ip: IPAddress) -> str:
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return _kind(ip.ipv4_mapped)
    for test, name in (
        ("is_loopback", "a loopback address"),
        ("is_unspecified", "the unspecified address"),
        ("is_link_local", "a link-local address"),
        ("is_multicast", "a multicast address"),
        ("is_private", "a private address"),
    ):
        if getattr(ip, test):
            return name
    return "not a public address"


def check_webhook_url(url: str, *, allow_private: bool = False) -> None:
    """Refuse a URL whose host is a non-public address (any spelling) or a localhost name."""
    if allow_private:
        return
    host = urlsplit(url).hostname or ""
    name = host.rstrip(".").lower()
    if name == "localhost" or name.endswith(".localhost"):
        raise DestinationRefused(
            f"webhook destinations must be public addresses; {host} is this machine"
        )
    ip = parse_address(host)
    if ip is not None and not is_public(ip):
        raise _refuse_address(host, ip)


def checked_addresses(host: str, port: int, resolver: Resolver) -> list[str]:
    """Every address `host` resolves to, all of them public, or DestinationRefused."""
    literal = parse_address(host)
    if literal is not None:
        addresses = [str(literal)]
    else:
        try:
            addresses = resolver(host, port)
        except OSError:
            raise httpcore.ConnectError("could not resolve the host name") from None
        if not addresses:
            raise httpcore.ConnectError("could not resolve the host name")
    for text in addresses:
        ip = parse_address(text)
        if ip is None or not is_public(ip):
            # one private answer is enough: a name that also points inside is not trusted
            raise DestinationRefused(
                f"webhook destinations must be public addresses; {host} resolves to "
                + ("an address that is not public" if ip is None else _kind(ip))
            )
    return addresses


class _GuardedBackend(httpcore.NetworkBackend):
    """httpcore's synchronous backend, connecting only to checked public addresses."""

    def __init__(self, resolver: Resolver) -> None:
        self._inner = httpcore.SyncBackend()
        self._resolver = resolver

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        addresses = checked_addresses(host, port, self._resolver)
        last: Exception | None = None
        for address in addresses:
            try:
                return self._inner.connect_tcp(
                    address, port, timeout, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
        assert last is not None
        raise last

    def connect_unix_socket(self, *args: Any, **kwargs: Any) -> httpcore.NetworkStream:
        raise DestinationRefused("webhook destinations must be public addresses")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class GuardedTransport(httpx.HTTPTransport):
    """An httpx transport whose connections go only to public addresses (checked at connect
    time, after resolution). TLS verification and SNI still use the URL's host name: httpcore
    passes the origin's host to start_tls, not the address it connected to."""

    def __init__(self, resolver: Resolver = system_resolver, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # httpx has no public hook for the network backend; its pool takes one (httpcore >= 1.0).
        self._pool._network_backend = _GuardedBackend(resolver)


def delivery_transport(
    *, allow_private: bool, resolver: Resolver = system_resolver
) -> httpx.BaseTransport:
    """The transport webhook deliveries use; trust_env off, so no proxy variables reroute them."""
    if allow_private:
        return httpx.HTTPTransport(trust_env=False)
    return GuardedTransport(resolver, trust_env=False)
