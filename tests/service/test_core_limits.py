"""Rate limits (spec, Limits) under a scaled window and a fake clock, and ETags with 304."""

from __future__ import annotations

import datetime as dt

import httpx

from bpservice.ratelimit import BucketKey
from tests.conftest import Service
from tests.service.conftest import RATE_HEADERS, ServiceFactory, Tree, ok, reading

# FakeClock starts at 2026-11-20 09:30:00 UTC; 60 s windows are aligned, so this one ends 09:31.
WINDOW_END = int(dt.datetime(2026, 11, 20, 9, 31, tzinfo=dt.UTC).timestamp())


def remaining(r: httpx.Response) -> int:
    return int(r.headers["X-RateLimit-Remaining"])


def test_spec_limits_and_headers_on_every_response(limited_service: Service) -> None:
    with limited_service.client() as api:
        responses = [
            api.get("/v1/properties"),
            api.post("/v1/properties", json={}),
            api.get("/v1/properties/prp_missing"),
            api.get("/v1/no-such-route"),
            api.put("/v1/properties"),
            api.post("/v1/properties", content=b"{", headers={"Content-Type": "application/json"}),
        ]
    with limited_service.client("") as anonymous:
        responses.append(anonymous.get("/v1/properties"))
    assert [r.status_code for r in responses] == [200, 422, 404, 404, 405, 400, 401]
    for r in responses:
        assert all(h in r.headers for h in RATE_HEADERS), r.request.url
        assert r.headers["X-RateLimit-Limit"] == "1000"
        assert r.headers["X-RateLimit-Window"] == "60"
        assert r.headers["X-RateLimit-Reset"] == str(WINDOW_END)
    # one key's requests count down one bucket, error answers included
    assert [remaining(r) for r in responses[:6]] == [999, 998, 997, 996, 995, 994]
    # the sandbox has the same limits as production, in a bucket of its own
    with limited_service.client(limited_service.live_key) as live:
        r = live.get("/v1/properties")
    assert (r.headers["X-RateLimit-Limit"], remaining(r)) == ("1000", 999)


def test_per_key_limit_gives_429_then_resets_with_the_window(
    scaled_service: ServiceFactory,
) -> None:
    service = scaled_service(per_key=5)
    other_key = service.new_key(None)
    with service.client() as api:
        statuses = [api.get("/v1/properties").status_code for _ in range(5)]
        assert statuses == [200] * 5
        service.clock.advance(20)  # 09:30:20, 40 s before the window ends
        r = api.get("/v1/properties")
        assert r.status_code == 429
        error = r.json()["error"]
        assert error["code"] == "rate_limit_exceeded" and error["message"]
        assert error["retry_after"] == 40 and isinstance(error["retry_after"], int)
        assert r.headers["Retry-After"] == "40"
        assert (r.headers["X-RateLimit-Limit"], remaining(r)) == ("5", 0)
        assert r.headers["X-RateLimit-Reset"] == str(WINDOW_END)
        # a refused request is not counted: still refused, with the same numbers
        assert api.post("/v1/properties", json={}).status_code == 429
        # keys have independent buckets
        with service.client(other_key) as other:
            assert other.get("/v1/properties").status_code == 200
        service.clock.advance(40)
        r = api.get("/v1/properties")
        assert r.status_code == 200 and remaining(r) == 4
        assert r.headers["X-RateLimit-Reset"] == str(WINDOW_END + 60)


def test_bulk_bucket_is_separate_and_also_spends_the_key_bucket(
    scaled_service: ServiceFactory,
) -> None:
    service = scaled_service(per_key=50, bulk=2)
    with service.client() as api:
        tree = Tree(api)  # 3 requests
        batch = {"readings": [reading("2025-01-01", "2025-01-31")]}
        first = api.post(tree.batch, json=batch)
        assert first.status_code == 201
        assert first.headers["X-RateLimit-Bucket"] == "bulk"
        assert (first.headers["X-RateLimit-Limit"], remaining(first)) == ("2", 1)
        assert (
            api.post(
                tree.batch, json={"readings": [reading("2025-02-01", "2025-02-28")]}
            ).status_code
            == 201
        )
        r = api.post(tree.batch, json={"readings": [reading("2025-03-01", "2025-03-31")]})
        assert r.status_code == 429
        assert r.json()["error"]["bucket"] == "bulk" and r.json()["error"]["retry_after"] == 60
        assert r.headers["X-RateLimit-Limit"] == "2" and r.headers["Retry-After"] == "60"
        # other endpoints still answer; the two accepted batches counted in the key bucket too
        # (3 setup + 2 batches = 5 taken; the refused batch took nothing)
        r = api.get("/v1/properties")
        assert r.status_code == 200 and r.headers["X-RateLimit-Bucket"] == "key"
        assert (r.headers["X-RateLimit-Limit"], remaining(r)) == ("50", 44)
        single = api.post(tree.readings, json=reading("2025-03-01", "2025-03-31"))
        assert single.status_code == 201


def test_key_bucket_refuses_a_batch_even_with_bulk_budget_left(
    scaled_service: ServiceFactory,
) -> None:
    service = scaled_service(per_key=4, bulk=10)
    with service.client() as api:
        tree = Tree(api)  # 3 requests
        assert (
            api.post(
                tree.batch, json={"readings": [reading("2025-01-01", "2025-01-31")]}
            ).status_code
            == 201
        )
        r = api.post(tree.batch, json={"readings": [reading("2025-02-01", "2025-02-28")]})
        assert r.status_code == 429 and r.json()["error"]["bucket"] == "key"


def test_report_generation_bucket(scaled_service: ServiceFactory) -> None:
    service = scaled_service(per_key=50, reports=2)
    with service.client() as api:
        statuses = [api.post("/v1/reports", json={}).status_code for _ in range(3)]
        assert statuses[2] == 429 and 429 not in statuses[:2]
        r = api.post("/v1/reports", json={})
        assert r.json()["error"]["bucket"] == "reports"
        assert api.get("/v1/properties").status_code == 200


def test_etag_on_every_core_get_and_304_without_body(
    service: Service, checked: httpx.Client
) -> None:
    tree = Tree(checked)
    ok(checked.post(tree.readings, json=reading("2025-01-01", "2025-01-31")), 201)
    gets = [
        "/v1/properties",
        f"/v1/properties/{tree.pid}",
        f"/v1/properties/{tree.pid}/buildings",
        f"/v1/properties/{tree.pid}/buildings/{tree.bid}",
        f"/v1/buildings/{tree.bid}/meters",
        f"/v1/buildings/{tree.bid}/meters/{tree.mid}",
        tree.readings,
        f"/v1/buildings/{tree.bid}/lock",
        "/v1/users",
        f"/v1/users/{service.owner_user_id}",
    ]
    for path in gets:
        r = checked.get(path)
        assert r.status_code == 200 and r.headers["ETag"].startswith('"'), path
        again = checked.get(path, headers={"If-None-Match": r.headers["ETag"]})
        assert again.status_code == 304 and again.content == b"", path
        assert again.headers["ETag"] == r.headers["ETag"]
        assert "content-type" not in again.headers
        assert remaining(again) == remaining(r), path


def test_etag_changes_with_the_data(service: Service, checked: httpx.Client) -> None:
    tree = Tree(checked)
    path = f"/v1/properties/{tree.pid}"
    first = checked.get(path)
    etag = first.headers["ETag"]
    assert checked.get(path, headers={"If-None-Match": f'"other", W/{etag}'}).status_code == 304
    assert checked.get(path, headers={"If-None-Match": "*"}).status_code == 304
    ok(checked.patch(path, json={"name": "Changed"}))
    r = checked.get(path, headers={"If-None-Match": etag})
    assert r.status_code == 200 and r.json()["data"]["name"] == "Changed"
    assert r.headers["ETag"] != etag


def test_304_is_not_counted_even_when_the_bucket_is_empty(scaled_service: ServiceFactory) -> None:
    service = scaled_service(per_key=3)
    with service.client() as api:
        r = api.get("/v1/properties")
        etag = r.headers["ETag"]
        for _ in range(5):
            again = api.get("/v1/properties", headers={"If-None-Match": etag})
            assert again.status_code == 304 and remaining(again) == 2
        assert api.get("/v1/users").status_code == 200
        assert api.get("/v1/users").status_code == 200
        assert api.get("/v1/users").status_code == 429
        # unchanged data is still answered 304 with the bucket empty; changed data is not
        r = api.get("/v1/properties", headers={"If-None-Match": etag})
        assert r.status_code == 304 and remaining(r) == 0
        r = api.get("/v1/properties", headers={"If-None-Match": '"stale"'})
        assert r.status_code == 429 and r.headers["Retry-After"] == "60"


def test_if_none_match_star_is_counted(scaled_service: ServiceFactory) -> None:
    """Security item 3: `If-None-Match: *` runs the handler, so it counts like any GET and, once
    the bucket is empty, is refused with 429 (it used to be answered 304 for free, forever)."""
    service = scaled_service(per_key=3)
    with service.client() as api:
        remaining = []
        for _ in range(3):
            r = api.get("/v1/properties", headers={"If-None-Match": "*"})
            assert r.status_code == 304
            remaining.append(int(r.headers["X-RateLimit-Remaining"]))
        assert remaining == [2, 1, 0]
        r = api.get("/v1/properties", headers={"If-None-Match": "*"})
        assert r.status_code == 429


def test_refund_only_in_the_window_the_unit_was_taken_from(scaled_service: ServiceFactory) -> None:
    """A 304 whose window ended while the handler ran gives nothing back to the next window."""
    service = scaled_service(per_key=5)
    limiter = service.app.state.limiter
    keys = [BucketKey("key", "k1")]
    granted, states = limiter.acquire(keys)
    assert granted and states[0].remaining == 4
    service.clock.advance(states[0].reset - service.clock().timestamp())  # next window
    assert limiter.acquire(keys)[1][0].remaining == 4
    after = limiter.release(keys, states[0].window_start)
    assert after[0].remaining == 4  # not 5: the old window's unit is not refunded into this one
