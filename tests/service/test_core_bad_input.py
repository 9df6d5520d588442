"""Bad input never produces a 500: every refusal is a 4xx with the `{error:{code,message}}` body.
Also: a write is committed before its response leaves the service."""

from __future__ import annotations

import json
from typing import Any

import httpx
from sqlalchemy import select

from bpservice.db.models import Property
from tests.conftest import Service
from tests.service.conftest import BUILDING, PROPERTY, Tree, ok, reading

JSON = {"Content-Type": "application/json"}


def assert_error(r: httpx.Response, status: int, code: str | None = None) -> dict[str, Any]:
    assert r.status_code == status, (r.request.method, r.request.url, r.text[:300])
    error = r.json()["error"]
    assert isinstance(error["code"], str) and isinstance(error["message"], str)
    if code is not None:
        assert error["code"] == code, error
    return error


def test_malformed_json_bodies(checked: httpx.Client) -> None:
    for raw in (b"{not json", b'{"name": "a",}', b"\xff\xfe\x00", b'{"a": 1', b"[", b"'x'"):
        assert_error(checked.post("/v1/properties", content=raw, headers=JSON), 400, "invalid_json")
    # integers too long for the JSON decoder are malformed JSON too
    giant = b'{"name": ' + b"9" * 5000 + b"}"
    assert_error(checked.post("/v1/properties", content=giant, headers=JSON), 400, "invalid_json")


def test_json_that_is_not_an_object(checked: httpx.Client) -> None:
    for raw in (b"[]", b"null", b"42", b'"text"', b"true"):
        error = assert_error(checked.post("/v1/properties", content=raw, headers=JSON), 422)
        assert error["details"][0]["field"] == "body"
    assert_error(checked.post("/v1/properties", content=b"", headers=JSON), 422, "validation_error")


def test_wrong_content_types(checked: httpx.Client) -> None:
    body = json.dumps(PROPERTY).encode()
    for content_type in ("text/plain", "application/x-www-form-urlencoded", "application/xml"):
        r = checked.post("/v1/properties", content=body, headers={"Content-Type": content_type})
        error = assert_error(r, 415, "unsupported_media_type")
        assert content_type in error["message"]
    r = checked.post("/v1/properties", content=body)  # no Content-Type at all
    assert_error(r, 415, "unsupported_media_type")
    r = checked.post(
        "/v1/properties", content=body, headers={"Content-Type": "application/json; charset=utf-8"}
    )
    assert r.status_code == 201
    assert ok(checked.get("/v1/properties"))["meta"]["total"] == 1


def test_wrong_types_nan_infinity_and_giant_numbers(checked: httpx.Client) -> None:
    tree = Tree(checked)
    url = f"/v1/properties/{tree.pid}/buildings"
    for raw_value in (
        "NaN",
        "Infinity",
        "-Infinity",
        "1e999",
        "1" + "0" * 400,
        '"1000"',
        "true",
        "[1000]",
        "{}",
    ):
        raw = json.dumps({**BUILDING, "gfa_m2": "@"}).replace('"@"', raw_value).encode()
        error = assert_error(checked.post(url, content=raw, headers=JSON), 422, "validation_error")
        assert error["details"][0]["field"] == "gfa_m2"
    raw = json.dumps({**BUILDING, "year_built": "@"}).replace('"@"', "1" + "0" * 300).encode()
    assert_error(checked.post(url, content=raw, headers=JSON), 422, "validation_error")
    raw = json.dumps(reading("2025-01-01", "2025-01-31")).replace("1000.0", "NaN").encode()
    assert_error(checked.post(tree.readings, content=raw, headers=JSON), 422, "validation_error")
    # in a batch, a non-finite consumption rejects that reading only
    raw = json.dumps(
        {"readings": [reading("2025-01-01", "2025-01-31"), reading("2025-02-01", "2025-02-28")]}
    )
    raw = raw.replace("1000.0", "NaN", 1).encode()
    data = ok(checked.post(tree.batch, content=raw, headers=JSON), 201)["data"]
    assert (data["accepted"], data["rejected"], data["errors"][0]["index"]) == (1, 1, 0)


def test_extreme_but_valid_values(checked: httpx.Client) -> None:
    tree = Tree(checked)
    # reading dates start in 1900; year-1 dates would overflow date arithmetic downstream
    for start, end in (("0001-01-01", "0001-01-01"), ("1899-12-31", "1900-01-31")):
        error = assert_error(checked.post(tree.readings, json=reading(start, end, 1)), 422)
        assert error["details"][0]["field"] == "start_date"
    ok(checked.post(tree.readings, json=reading("1900-01-01", "1900-01-31", 1)), 201)
    assert_error(
        checked.post(tree.readings, json=reading("9999-12-31", "9999-12-31")), 422, "future_date"
    )
    assert_error(checked.post(tree.readings, json=reading("0000-01-01", "0001-01-01")), 422)
    ok(checked.post(tree.readings, json=reading("2025-01-01", "2025-01-31", 1e15)), 201)
    assert_error(checked.post(tree.readings, json=reading("2025-02-01", "2025-02-28", 1e16)), 422)
    ok(checked.post(tree.readings, json=reading("2025-03-01", "2025-03-31", -1e15)), 201)


def test_strings_with_nul_and_oversized_text(checked: httpx.Client) -> None:
    error = assert_error(checked.post("/v1/properties", json={**PROPERTY, "name": "a\x00b"}), 422)
    assert error["details"][0]["field"] == "name"
    assert_error(checked.post("/v1/properties", json={**PROPERTY, "name": "x" * 201}), 422)
    assert_error(
        checked.post("/v1/users/invite", json={"email": "a\x00@b.co", "role": "viewer"}), 422
    )
    prop = ok(checked.post("/v1/properties", json={**PROPERTY, "name": "Ünïcødé 🏢 名"}), 201)[
        "data"
    ]
    assert prop["name"] == "Ünïcødé 🏢 名"


def test_odd_path_ids(checked: httpx.Client) -> None:
    tree = Tree(checked)
    odd = [
        "%00",
        "x" * 3000,
        "%F0%9F%98%80",
        "prp_",
        "PRP_ABC",
        "%27%20OR%201%3D1--",
        "-1",
        "0",
        "null",
        "%2E%2E",
    ]
    for value in odd:
        for path in (
            f"/v1/properties/{value}",
            f"/v1/properties/{value}/buildings",
            f"/v1/properties/{tree.pid}/buildings/{value}",
            f"/v1/buildings/{value}/meters",
            f"/v1/buildings/{tree.bid}/meters/{value}/readings",
            f"/v1/users/{value}",
        ):
            r = checked.get(path)
            assert r.status_code in (404, 405), (path, r.status_code)
            assert r.json()["error"]["code"] in ("not_found", "method_not_allowed")
        r = checked.delete(f"{tree.readings}/{value}")
        assert r.status_code in (404, 405)


def test_huge_bodies_are_refused_with_413(service: Service, checked: httpx.Client) -> None:
    tree = Tree(checked)
    limit = service.app.state.settings.max_body_bytes
    big = b'{"readings": [' + b" " * (limit + 1) + b"]}"
    assert_error(checked.post(tree.batch, content=big, headers=JSON), 413, "payload_too_large")

    def chunks() -> Any:  # no Content-Length: the limit is enforced while streaming
        for _ in range(6):
            yield b" " * (1024 * 1024)

    r = checked.post("/v1/properties", content=chunks(), headers=JSON)
    assert_error(r, 413, "payload_too_large")
    assert ok(checked.get("/v1/properties"))["meta"]["total"] == 1


def test_unknown_routes_and_methods(checked: httpx.Client) -> None:
    assert_error(checked.get("/v1/nothing-here"), 404, "not_found")
    assert_error(checked.put("/v1/properties"), 405, "method_not_allowed")
    assert_error(checked.delete("/v1/users"), 405, "method_not_allowed")


def test_query_parameters(checked: httpx.Client) -> None:
    for params in (
        {"page": "1e3"},
        {"page": "99999999999999999999999"},
        {"per_page": "-1"},
        {"per_page": ""},
        {"sort": "name;drop table"},
        {"filter[country]": "\x00\x00"},
        {"filter[type]": ""},
    ):
        error = assert_error(checked.get("/v1/properties", params=params), 422, "validation_error")
        assert error["details"][0]["field"] in params


def test_a_write_is_committed_before_the_response_is_sent(service: Service) -> None:
    """With request-scoped sessions FastAPI would send 201 first and commit afterwards."""
    import anyio

    db = service.app.state.db
    seen: list[tuple[int, int]] = []

    async def run() -> None:
        async def receive() -> dict[str, Any]:
            return {
                "type": "http.request",
                "body": json.dumps(PROPERTY).encode(),
                "more_body": False,
            }

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":

                def count() -> int:
                    with db.read() as session:
                        return len(session.scalars(select(Property.id)).all())

                seen.append((message["status"], await anyio.to_thread.run_sync(count)))

        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": "/v1/properties",
            "raw_path": b"/v1/properties",
            "query_string": b"",
            "root_path": "",
            "headers": [
                (b"authorization", f"Bearer {service.test_key}".encode()),
                (b"content-type", b"application/json"),
            ],
            "client": ("127.0.0.1", 1),
            "server": ("127.0.0.1", 80),
            "state": {},
        }
        await service.app(scope, receive, send)

    anyio.run(run)
    assert seen == [(201, 1)]
