"""Request and response models. Each view of a resource (list item, get, create response) has its own
model so the OpenAPI document states exactly which fields each answer carries."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
)
from pydantic_core import PydanticCustomError

from bpservice.api.types import (
    Area,
    Country,
    Currency,
    Email,
    Floors,
    HoursPerWeek,
    ISODate,
    Latitude,
    Longitude,
    MeterSource,
    MeterType,
    Name,
    NonNegative,
    OptionalArea,
    Percent,
    PropertyType,
    Quantity,
    ReadingDate,
    Role,
    ShortText,
    UseType,
    YearBuilt,
)

T = TypeVar("T")


def _not_null(cls: type, value: Any, info: ValidationInfo) -> Any:
    """PATCH: a required field may be left out, but not set to null."""
    if value is None:
        raise ValueError(f"{info.field_name} cannot be null")
    return value


def non_nullable(*names: str) -> Callable[[dict[str, Any]], None]:
    """`json_schema_extra` of a PATCH model whose listed fields may be left out but not set to
    null (refused with 422): the document drops their `null` branch so it says so too."""

    def edit(schema: dict[str, Any]) -> None:
        for name in names:
            field = schema["properties"][name]
            kept = [b for b in field.get("anyOf", []) if b.get("type") != "null"]
            if "anyOf" in field and len(kept) == 1:
                del field["anyOf"]
                field.update(kept[0])
            if field.get("default", ...) is None:
                del field["default"]

    return edit


class Request(BaseModel):
    """Request bodies refuse unknown fields, so a typo is an error rather than silently ignored."""

    model_config = ConfigDict(extra="forbid")


# --- shared shapes -------------------------------------------------------------------------------


class Meta(BaseModel):
    total: int
    page: int
    per_page: int
    total_pages: int


class Data(BaseModel, Generic[T]):
    data: T


class Page(BaseModel, Generic[T]):
    data: list[T]
    meta: Meta


class ErrorDetail(BaseModel):
    field: str
    code: str
    message: str


class ErrorInfo(BaseModel):
    model_config = ConfigDict(extra="allow")

    code: str
    message: str
    details: list[ErrorDetail] | None = None
    retry_after: int | None = Field(None, description="Seconds to wait; on 429 and 503 only")


class ErrorBody(BaseModel):
    error: ErrorInfo


# --- properties ----------------------------------------------------------------------------------


class AddressIn(Request):
    street: Name
    city: Name
    state: ShortText | None = None
    postal_code: ShortText | None = None
    country: Country
    latitude: Latitude | None = None
    longitude: Longitude | None = None


class AddressPatch(Request):
    model_config = ConfigDict(
        extra="forbid", json_schema_extra=non_nullable("street", "city", "country")
    )

    street: Name | None = None
    city: Name | None = None
    state: ShortText | None = None
    postal_code: ShortText | None = None
    country: Country | None = None
    latitude: Latitude | None = None
    longitude: Longitude | None = None

    _required_not_null = field_validator("street", "city", "country")(_not_null)


class PropertyCreate(Request):
    name: Name
    address: AddressIn
    type: PropertyType
    internal_ref: ShortText | None = None


class PropertyUpdate(Request):
    model_config = ConfigDict(
        extra="forbid", json_schema_extra=non_nullable("name", "address", "type")
    )

    name: Name | None = None
    address: AddressPatch | None = None
    type: PropertyType | None = None
    internal_ref: ShortText | None = None

    _required_not_null = field_validator("name", "address", "type")(_not_null)


class AddressSummary(BaseModel):
    street: str
    city: str
    state: str | None
    postal_code: str | None
    country: str


class Address(AddressSummary):
    latitude: float | None
    longitude: float | None


class BuildingRef(BaseModel):
    id: str
    name: str


class PropertySummary(BaseModel):
    id: str
    name: str
    address: AddressSummary
    type: str
    internal_ref: str | None
    status: Literal["active", "archived"]
    building_count: int
    total_gfa_m2: float
    created_at: dt.datetime
    updated_at: dt.datetime


class PropertyCreated(PropertySummary):
    address: Address  # type: ignore[assignment]


class PropertyDetail(PropertyCreated):
    buildings: list[BuildingRef]


class PropertyArchived(BaseModel):
    id: str
    status: Literal["archived"]
    archived_at: dt.datetime


# --- buildings -----------------------------------------------------------------------------------


class UseTypeArea(Request):
    type: UseType
    gfa_m2: Area


class BuildingCreate(Request):
    name: Name
    primary_use_type: UseType
    gfa_m2: Area
    year_built: YearBuilt
    floors: Floors
    occupancy_pct: Percent | None = None
    operating_hours_week: HoursPerWeek | None = None
    use_types: list[UseTypeArea] | None = Field(None, max_length=50)
    nla_m2: OptionalArea | None = None
    renewable_capacity_kw: NonNegative | None = None
    car_park_area_m2: OptionalArea | None = None


class BuildingUpdate(Request):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra=non_nullable(
            "name", "primary_use_type", "gfa_m2", "year_built", "floors"
        ),
    )

    name: Name | None = None
    primary_use_type: UseType | None = None
    gfa_m2: Area | None = None
    year_built: YearBuilt | None = None
    floors: Floors | None = None
    occupancy_pct: Percent | None = None
    operating_hours_week: HoursPerWeek | None = None
    use_types: list[UseTypeArea] | None = Field(None, max_length=50)
    nla_m2: OptionalArea | None = None
    renewable_capacity_kw: NonNegative | None = None
    car_park_area_m2: OptionalArea | None = None

    _required_not_null = field_validator(
        "name", "primary_use_type", "gfa_m2", "year_built", "floors"
    )(_not_null)


class UseTypeOut(BaseModel):
    type: str
    gfa_m2: float


class MeterRef(BaseModel):
    id: str
    type: str
    status: str


class BuildingSummary(BaseModel):
    id: str
    property_id: str
    name: str
    primary_use_type: str
    gfa_m2: float
    gfa_sqft: float
    year_built: int
    floors: int
    occupancy_pct: float | None
    operating_hours_week: float | None
    data_quality_grade: Literal["A", "B", "C", "D", "E", "F"]
    status: str
    created_at: dt.datetime
    updated_at: dt.datetime


class BuildingDetail(BuildingSummary):
    use_types: list[UseTypeOut]
    nla_m2: float | None
    renewable_capacity_kw: float | None
    car_park_area_m2: float | None
    meters: list[MeterRef]


class LockRequest(Request):
    locked_through: ISODate = Field(
        description="Readings of the building that end on or before this date become locked."
    )


class LockOut(BaseModel):
    building_id: str
    locked_through: dt.date | None
    locked_at: dt.datetime | None
    locked_reading_count: int


# --- meters and readings -------------------------------------------------------------------------


class MeterCreate(Request):
    type: MeterType
    unit: Name
    name: ShortText | None = None
    source: MeterSource = "manual"
    provider: ShortText | None = None


class MeterOut(BaseModel):
    id: str
    building_id: str
    type: str
    name: str | None
    unit: str
    source: str
    provider: str | None
    status: str
    latest_reading_date: dt.date | None
    created_at: dt.datetime


class ReadingCreate(Request):
    start_date: ReadingDate
    end_date: ReadingDate
    consumption: Quantity
    cost: Quantity | None = None
    cost_currency: Currency | None = None
    demand_kw: NonNegative | None = None

    @field_validator("end_date")
    @classmethod
    def _ordered(cls, end_date: dt.date, info: ValidationInfo) -> dt.date:
        start_date = info.data.get("start_date")
        if start_date is not None and end_date < start_date:
            raise ValueError("end_date must be on or after start_date")
        return end_date


class BatchRequest(Request):
    readings: list[dict[str, Any]] = Field(
        min_length=1,
        max_length=500,
        description="Up to 500 readings, each shaped like the single-reading request body.",
        json_schema_extra={"items": {"$ref": "#/components/schemas/ReadingCreate"}},
    )


class ReadingOut(BaseModel):
    id: str
    meter_id: str
    start_date: dt.date
    end_date: dt.date
    consumption: float
    unit: str
    cost: float | None
    cost_currency: str | None
    demand_kw: float | None
    source: str
    anomaly_flags: list[Literal["spike", "drop", "negative"]]
    created_at: dt.datetime


class RejectedReading(BaseModel):
    model_config = ConfigDict(extra="allow")

    index: int = Field(description="Position of the reading in the submitted batch, from 0")
    code: str
    message: str
    field: str | None = None
    conflicting_reading_id: str | None = None


class BatchResult(BaseModel):
    accepted: int
    rejected: int
    readings: list[ReadingOut]
    errors: list[RejectedReading]


class RejectedUploadRow(RejectedReading):
    index: int = Field(description="Position of the row among the upload's readings, from 0")
    row: int = Field(description="The row's line in the CSV (the header is line 1)")
    meter_id: str | None = None


class UploadResult(BaseModel):
    accepted: int
    rejected: int
    readings: list[ReadingOut]
    errors: list[RejectedUploadRow]


# --- users ---------------------------------------------------------------------------------------

PropertyAccess = Literal["all"] | list[str]


def _property_access_in(value: Any) -> str | list[str]:
    """One clear error instead of one per union branch."""
    if value == "all":
        return "all"
    if isinstance(value, list) and all(isinstance(v, str) for v in value) and len(value) <= 10_000:
        return list(value)
    raise PydanticCustomError(
        "property_access", 'property_access must be "all" or an array of property ids'
    )


PropertyAccessIn = Annotated[
    Any,
    PlainValidator(_property_access_in),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "const": "all"},
                {"type": "array", "items": {"type": "string"}},
            ],
            "description": '"all", or an array of property ids',
        }
    ),
]


class UserInvite(Request):
    email: Email
    role: Role
    property_access: PropertyAccessIn = "all"
    name: ShortText | None = None


class UserUpdate(Request):
    model_config = ConfigDict(
        extra="forbid", json_schema_extra=non_nullable("role", "property_access")
    )

    role: Role | None = None
    property_access: PropertyAccessIn = None

    _required_not_null = field_validator("role", "property_access")(_not_null)


class UserSummary(BaseModel):
    id: str
    email: str
    name: str | None
    role: str
    status: str
    last_login_at: dt.datetime | None
    created_at: dt.datetime


class UserDetail(UserSummary):
    mfa_enabled: bool
    sso_provider: str | None
    property_access: PropertyAccess


class UserInvited(BaseModel):
    id: str
    email: str
    role: str
    status: str
    property_access: PropertyAccess
    invite_expires_at: dt.datetime
    created_at: dt.datetime


class UserDeactivated(BaseModel):
    id: str
    status: Literal["deactivated"]
    deactivated_at: dt.datetime
