"""Properties: field sets per view, validation, list pagination/filters/sorts, PATCH and archive."""

from __future__ import annotations

import re

import httpx

from tests.conftest import Service
from tests.service.conftest import PROPERTY, create_building, create_property, ok

ID_RE = re.compile(r"^prp_[0-9a-z]{24}$")
TIMESTAMP_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")
SUMMARY_KEYS = {
    "id",
    "name",
    "address",
    "type",
    "internal_ref",
    "status",
    "building_count",
    "total_gfa_m2",
    "created_at",
    "updated_at",
}
ADDRESS_KEYS = {"street", "city", "state", "postal_code", "country"}
COORDINATES = {"latitude", "longitude"}


def test_create_answers_201_with_the_create_view(checked: httpx.Client) -> None:
    body = {
        **PROPERTY,
        "address": {**PROPERTY["address"], "state": "Greater London", "postal_code": "SE1 9PX"},
        "internal_ref": "LON-001",
    }
    r = checked.post("/v1/properties", json=body)
    assert r.status_code == 201
    assert set(r.json()) == {"data"}
    prop = r.json()["data"]
    assert set(prop) == SUMMARY_KEYS
    assert set(prop["address"]) == ADDRESS_KEYS | COORDINATES
    assert ID_RE.match(prop["id"])
    assert prop["status"] == "active"
    assert prop["building_count"] == 0 and prop["total_gfa_m2"] == 0
    assert prop["internal_ref"] == "LON-001"
    assert prop["address"]["postal_code"] == "SE1 9PX"
    assert TIMESTAMP_RE.match(prop["created_at"]) and TIMESTAMP_RE.match(prop["updated_at"])


def test_ids_are_prefixed_opaque_and_distinct(checked: httpx.Client) -> None:
    ids = {create_property(checked)["id"] for _ in range(5)}
    assert len(ids) == 5 and all(ID_RE.match(i) for i in ids)


def test_get_has_coordinates_and_buildings_list_items_do_not(checked: httpx.Client) -> None:
    address = {**PROPERTY["address"], "latitude": 51.5, "longitude": -0.1}
    prop = create_property(checked, address=address)
    building = create_building(checked, prop["id"])
    got = ok(checked.get(f"/v1/properties/{prop['id']}"))["data"]
    assert set(got) == SUMMARY_KEYS | {"buildings"}
    assert got["address"]["latitude"] == 51.5 and got["address"]["longitude"] == -0.1
    assert got["buildings"] == [{"id": building["id"], "name": building["name"]}]
    listed = ok(checked.get("/v1/properties"))
    assert set(listed) == {"data", "meta"}
    item = listed["data"][0]
    assert set(item) == SUMMARY_KEYS
    assert set(item["address"]) == ADDRESS_KEYS


INVALID_CREATES = [
    ({k: v for k, v in PROPERTY.items() if k != "name"}, "name"),
    ({k: v for k, v in PROPERTY.items() if k != "type"}, "type"),
    ({k: v for k, v in PROPERTY.items() if k != "address"}, "address"),
    ({**PROPERTY, "address": {"city": "London", "country": "GB"}}, "address.street"),
    ({**PROPERTY, "address": {"street": "1 A St", "country": "GB"}}, "address.city"),
    ({**PROPERTY, "address": {"street": "1 A St", "city": "London"}}, "address.country"),
    ({**PROPERTY, "name": ""}, "name"),
    ({**PROPERTY, "name": 42}, "name"),
    ({**PROPERTY, "type": "castle"}, "type"),
    ({**PROPERTY, "colour": "blue"}, "colour"),
    ({**PROPERTY, "address": {**PROPERTY["address"], "country": "UK"}}, "address.country"),
    ({**PROPERTY, "address": {**PROPERTY["address"], "country": "GBR"}}, "address.country"),
    ({**PROPERTY, "address": {**PROPERTY["address"], "country": "XX"}}, "address.country"),
    ({**PROPERTY, "address": {**PROPERTY["address"], "latitude": 91}}, "address.latitude"),
]


def test_create_validation_names_the_field(checked: httpx.Client) -> None:
    for body, field in INVALID_CREATES:
        r = checked.post("/v1/properties", json=body)
        assert r.status_code == 422, (field, r.text)
        error = r.json()["error"]
        assert error["code"] == "validation_error" and error["message"]
        assert field in [d["field"] for d in error["details"]], (field, error)
    assert ok(checked.get("/v1/properties"))["meta"]["total"] == 0


def test_country_codes_are_normalised_to_upper_case(checked: httpx.Client) -> None:
    prop = create_property(checked, address={**PROPERTY["address"], "country": "de"})
    assert prop["address"]["country"] == "DE"


def test_list_pagination_defaults_edges_and_maximum(
    service: Service, checked: httpx.Client
) -> None:
    empty = ok(checked.get("/v1/properties"))
    assert empty == {"data": [], "meta": {"total": 0, "page": 1, "per_page": 50, "total_pages": 0}}
    for i in range(7):
        create_property(checked, name=f"P{i}")
        service.clock.advance(1)
    r = ok(checked.get("/v1/properties", params={"per_page": 3, "page": 3}))
    assert r["meta"] == {"total": 7, "page": 3, "per_page": 3, "total_pages": 3}
    assert [p["name"] for p in r["data"]] == ["P6"]
    past = ok(checked.get("/v1/properties", params={"per_page": 3, "page": 4}))
    assert past["data"] == [] and past["meta"]["total"] == 7
    # A short page tells the total itself; full pages (the list may go on) count it.
    for per_page, page, shown in ((3, 1, 3), (3, 2, 3), (7, 1, 7), (8, 1, 7), (6, 2, 1)):
        r = ok(checked.get("/v1/properties", params={"per_page": per_page, "page": page}))
        assert len(r["data"]) == shown and r["meta"]["total"] == 7, (per_page, page)
    assert ok(checked.get("/v1/properties", params={"per_page": 200}))["meta"]["per_page"] == 200
    for params in ({"per_page": 201}, {"per_page": 0}, {"page": 0}, {"page": "x"}):
        r = checked.get("/v1/properties", params=params)
        assert r.status_code == 422, params
        assert r.json()["error"]["details"][0]["field"] in params


def test_default_page_size_is_50(service: Service, checked: httpx.Client) -> None:
    for i in range(51):
        create_property(checked, name=f"P{i:02d}")
    r = ok(checked.get("/v1/properties"))
    assert len(r["data"]) == 50 and r["meta"]["total_pages"] == 2
    assert len(ok(checked.get("/v1/properties", params={"page": 2}))["data"]) == 1


def test_filters_by_type_and_country(service: Service, checked: httpx.Client) -> None:
    create_property(checked, name="London office")
    create_property(
        checked, name="Paris shop", type="retail", address={**PROPERTY["address"], "country": "FR"}
    )
    service.clock.advance(1)
    create_property(checked, name="Lyon office", address={**PROPERTY["address"], "country": "FR"})

    def names(**params: str) -> list[str]:
        return [p["name"] for p in ok(checked.get("/v1/properties", params=params))["data"]]

    assert names(**{"filter[type]": "retail"}) == ["Paris shop"]
    assert names(**{"filter[country]": "FR"}) == ["Paris shop", "Lyon office"]
    assert names(**{"filter[country]": "fr", "filter[type]": "office"}) == ["Lyon office"]
    for params in ({"filter[country]": "France"}, {"filter[type]": "castle"}):
        assert checked.get("/v1/properties", params=params).status_code == 422


def test_sorts(service: Service, checked: httpx.Client) -> None:
    for name in ("Bravo", "Alpha", "Charlie"):
        create_property(checked, name=name)
        service.clock.advance(60)
    bravo = ok(checked.get("/v1/properties", params={"sort": "name"}))["data"][1]
    service.clock.advance(60)
    ok(checked.patch(f"/v1/properties/{bravo['id']}", json={"internal_ref": "B-1"}))

    def order(sort: str) -> list[str]:
        data = ok(checked.get("/v1/properties", params={"sort": sort}))["data"]
        return [p["name"] for p in data]

    assert order("name") == ["Alpha", "Bravo", "Charlie"]
    assert order("-name") == ["Charlie", "Bravo", "Alpha"]
    assert order("created_at") == ["Bravo", "Alpha", "Charlie"]
    assert order("-created_at") == ["Charlie", "Alpha", "Bravo"]
    assert order("updated_at") == ["Alpha", "Charlie", "Bravo"]
    assert order("-updated_at") == ["Bravo", "Charlie", "Alpha"]
    r = checked.get("/v1/properties", params={"sort": "type"})
    assert r.status_code == 422 and r.json()["error"]["details"][0]["field"] == "sort"


def test_patch_changes_given_fields_and_answers_the_full_property(
    service: Service, checked: httpx.Client
) -> None:
    prop = create_property(checked, internal_ref="OLD")
    service.clock.advance(30)
    r = checked.patch(
        f"/v1/properties/{prop['id']}",
        json={"name": "Renamed", "internal_ref": "NEW", "address": {"city": "Leeds"}},
    )
    updated = ok(r)["data"]
    assert set(updated) == SUMMARY_KEYS | {"buildings"}
    assert (updated["name"], updated["internal_ref"]) == ("Renamed", "NEW")
    assert updated["address"]["city"] == "Leeds"
    assert updated["address"]["street"] == PROPERTY["address"]["street"]
    assert updated["updated_at"] > prop["updated_at"]
    assert updated["created_at"] == prop["created_at"]
    got = ok(checked.get(f"/v1/properties/{prop['id']}"))["data"]
    assert got["name"] == "Renamed" and got["address"]["city"] == "Leeds"
    # null clears an optional field and is refused for a required one
    assert (
        ok(checked.patch(f"/v1/properties/{prop['id']}", json={"internal_ref": None}))["data"][
            "internal_ref"
        ]
        is None
    )
    r = checked.patch(f"/v1/properties/{prop['id']}", json={"name": None})
    assert r.status_code == 422 and r.json()["error"]["details"][0]["field"] == "name"
    r = checked.patch(f"/v1/properties/{prop['id']}", json={"address": {"country": "ZZ"}})
    assert r.status_code == 422
    assert r.json()["error"]["details"][0]["field"] == "address.country"


def test_archive(service: Service, checked: httpx.Client) -> None:
    prop = create_property(checked)
    other = create_property(checked, name="Kept")
    service.clock.advance(10)
    r = checked.post(f"/v1/properties/{prop['id']}/archive")
    data = ok(r)["data"]
    assert set(data) == {"id", "status", "archived_at"}
    assert data["id"] == prop["id"] and data["status"] == "archived"
    assert data["archived_at"] == "2026-11-20T09:30:10Z"
    got = ok(checked.get(f"/v1/properties/{prop['id']}"))["data"]
    assert got["status"] == "archived" and "archived_at" not in got
    again = checked.post(f"/v1/properties/{prop['id']}/archive")
    assert again.status_code == 409 and again.json()["error"]["code"] == "property_archived"
    r = checked.patch(f"/v1/properties/{prop['id']}", json={"name": "x"})
    assert r.status_code == 409 and r.json()["error"]["code"] == "property_archived"
    listed = ok(checked.get("/v1/properties"))["data"]
    assert {p["id"]: p["status"] for p in listed} == {prop["id"]: "archived", other["id"]: "active"}
    active = ok(checked.get("/v1/properties", params={"filter[status]": "active"}))["data"]
    assert [p["id"] for p in active] == [other["id"]]


def test_unknown_property_is_404(checked: httpx.Client) -> None:
    for pid in ("prp_000000000000000000000000", "nonsense"):
        r = checked.get(f"/v1/properties/{pid}")
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
        assert checked.patch(f"/v1/properties/{pid}", json={"name": "x"}).status_code == 404
        assert checked.post(f"/v1/properties/{pid}/archive").status_code == 404
