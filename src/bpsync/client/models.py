"""Typed models of the service's requests and responses (spec: Resources and their fields).

Responses allow unknown fields (a newer service may add some) but type the ones we know: ids as
prefixed strings, dates as `datetime.date`, timestamps as aware datetimes, enums where the spec
fixes the list. Requests forbid unknown fields, so a typo fails here instead of at the service."""

from __future__ import annotations

import datetime as dt
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

PropertyId = Annotated[str, StringConstraints(pattern=r"^prp_")]
BuildingId = Annotated[str, StringConstraints(pattern=r"^bld_")]
MeterId = Annotated[str, StringConstraints(pattern=r"^mtr_")]
ReadingId = Annotated[str, StringConstraints(pattern=r"^rdg_")]
UserId = Annotated[str, StringConstraints(pattern=r"^usr_")]
ReportId = Annotated[str, StringConstraints(pattern=r"^rpt_")]


class MeterType(StrEnum):
    ELECTRICITY = "electricity"
    NATURAL_GAS = "natural_gas"
    WATER = "water"
    DISTRICT_HEATING = "district_heating"
    DISTRICT_COOLING = "district_cooling"
    STEAM = "steam"
    FUEL_OIL = "fuel_oil"
    DIESEL = "diesel"
    LPG = "lpg"
    SOLAR = "solar"
    CHP = "chp"
    WASTE_LANDFILL = "waste_landfill"
    WASTE_RECYCLING = "waste_recycling"
    WASTE_COMPOST = "waste_compost"


class Role(StrEnum):
    OWNER = "owner"
    ADMIN = "admin"
    VIEWER = "viewer"


class UserStatus(StrEnum):
    ACTIVE = "active"
    INVITED = "invited"
    DEACTIVATED = "deactivated"


class PropertyStatus(StrEnum):
    ACTIVE = "active"
    ARCHIVED = "archived"


class ReportStatus(StrEnum):
    PROCESSING = "processing"
    COMPLETE = "complete"
    FAILED = "failed"


class Grade(StrEnum):
    A = "A"
    B = "B"
    C = "C"
    D = "D"
    E = "E"
    F = "F"


class AnomalyFlag(StrEnum):
    SPIKE = "spike"
    DROP = "drop"
    NEGATIVE = "negative"
    OVERLAP = "overlap"


class Model(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True, defer_build=True)


class RequestModel(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    def body(self, *, partial: bool = False) -> dict[str, Any]:
        """JSON body: creates leave out unset optionals; PATCHes send exactly what was set (so an
        explicit None clears a field)."""
        if partial:
            return self.model_dump(mode="json", exclude_unset=True)
        return self.model_dump(mode="json", exclude_none=True)


class Meta(Model):
    total: int
    page: int
    per_page: int
    total_pages: int


# --- properties and buildings --------------------------------------------------------------------


class Address(Model):
    street: str
    city: str
    state: str | None = None
    postal_code: str | None = None
    country: str
    latitude: float | None = None
    longitude: float | None = None


class AddressInput(RequestModel):
    street: str
    city: str
    state: str | None = None
    postal_code: str | None = None
    country: str
    latitude: float | None = None
    longitude: float | None = None


class AddressPatch(RequestModel):
    street: str | None = None
    city: str | None = None
    state: str | None = None
    postal_code: str | None = None
    country: str | None = None
    latitude: float | None = None
    longitude: float | None = None


class Ref(Model):
    id: str
    name: str


class Property(Model):
    """A property; `buildings` and the coordinates are present on get/create only."""

    id: PropertyId
    name: str
    address: Address
    type: str
    internal_ref: str | None = None
    status: PropertyStatus
    building_count: int
    total_gfa_m2: float
    buildings: list[Ref] | None = None
    created_at: dt.datetime
    updated_at: dt.datetime


class PropertyCreate(RequestModel):
    name: str
    address: AddressInput
    type: str
    internal_ref: str | None = None


class PropertyUpdate(RequestModel):
    name: str | None = None
    address: AddressPatch | None = None
    type: str | None = None
    internal_ref: str | None = None


class PropertyArchived(Model):
    id: PropertyId
    status: PropertyStatus
    archived_at: dt.datetime


class UseTypeArea(Model):
    type: str
    gfa_m2: float


class UseTypeInput(RequestModel):
    type: str
    gfa_m2: float


class MeterRef(Model):
    id: MeterId
    type: str
    status: str


class Building(Model):
    """A building; the detail fields (use_types, meters, nla_m2 ...) are present on get/create."""

    id: BuildingId
    property_id: PropertyId
    name: str
    primary_use_type: str
    gfa_m2: float
    gfa_sqft: float
    year_built: int
    floors: int
    occupancy_pct: float | None = None
    operating_hours_week: float | None = None
    data_quality_grade: Grade
    status: str
    use_types: list[UseTypeArea] | None = None
    nla_m2: float | None = None
    renewable_capacity_kw: float | None = None
    car_park_area_m2: float | None = None
    meters: list[MeterRef] | None = None
    created_at: dt.datetime
    updated_at: dt.datetime


class BuildingCreate(RequestModel):
    name: str
    primary_use_type: str
    gfa_m2: float
    year_built: int
    floors: int
    occupancy_pct: float | None = None
    operating_hours_week: float | None = None
    use_types: list[UseTypeInput] | None = None
    nla_m2: float | None = None
    renewable_capacity_kw: float | None = None
    car_park_area_m2: float | None = None


class BuildingUpdate(RequestModel):
    name: str | None = None
    primary_use_type: str | None = None
    gfa_m2: float | None = None
    year_built: int | None = None
    floors: int | None = None
    occupancy_pct: float | None = None
    operating_hours_week: float | None = None
    use_types: list[UseTypeInput] | None = None
    nla_m2: float | None = None
    renewable_capacity_kw: float | None = None
    car_park_area_m2: float | None = None


class Lock(Model):
    building_id: BuildingId
    locked_through: dt.date | None = None
    locked_at: dt.datetime | None = None
    locked_reading_count: int = 0


# --- meters and readings -------------------------------------------------------------------------


class Meter(Model):
    id: MeterId
    building_id: BuildingId
    type: MeterType
    name: str | None = None
    unit: str
    source: str
    provider: str | None = None
    status: str
    latest_reading_date: dt.date | None = None
    created_at: dt.datetime


class MeterCreate(RequestModel):
    type: MeterType
    unit: str
    name: str | None = None
    source: Literal["manual", "automated_feed"] | None = None
    provider: str | None = None


class ReadingInput(RequestModel):
    start_date: dt.date
    end_date: dt.date
    consumption: float
    cost: float | None = None
    cost_currency: str | None = None
    demand_kw: float | None = None


class Reading(Model):
    id: ReadingId
    meter_id: MeterId
    start_date: dt.date
    end_date: dt.date
    consumption: float
    unit: str
    cost: float | None = None
    cost_currency: str | None = None
    demand_kw: float | None = None
    source: str
    anomaly_flags: list[AnomalyFlag] = Field(default_factory=list)
    created_at: dt.datetime


class ReadingSpan(BaseModel):
    """A stored reading's period and consumption, what overlap and anomaly checks compare
    against (`readings.spans_many`): the answer's other fields are skipped, not validated."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    id: ReadingId
    meter_id: MeterId
    start_date: dt.date
    end_date: dt.date
    consumption: float
    cost: float | None = None  # compared when a corrected bill is re-imported (issue 30)
    cost_currency: str | None = None
    demand_kw: float | None = None


class RejectedReading(Model):
    """Why one reading of a batch was refused; `index` is its position in the submitted list."""

    index: int
    code: str
    message: str
    field: str | None = None
    conflicting_reading_id: str | None = None
    conflicting_index: int | None = None
    locked_through: dt.date | None = None


class BatchResult(Model):
    accepted: int
    rejected: int
    readings: list[Reading]
    errors: list[RejectedReading] = Field(default_factory=list)


class RejectedUploadRow(RejectedReading):
    """Why one row of a CSV upload was refused: `index` among the rows (from 0), `row` its CSV
    line (the header is line 1), and the meter it named."""

    row: int
    meter_id: str | None = None


class UploadResult(Model):
    accepted: int
    rejected: int
    readings: list[Reading]
    errors: list[RejectedUploadRow] = Field(default_factory=list)


# --- users ---------------------------------------------------------------------------------------

PropertyAccess = Literal["all"] | list[str]


class User(Model):
    id: UserId
    email: str
    name: str | None = None
    role: Role
    status: UserStatus
    mfa_enabled: bool | None = None
    sso_provider: str | None = None
    property_access: PropertyAccess | None = None
    last_login_at: dt.datetime | None = None
    invite_expires_at: dt.datetime | None = None
    created_at: dt.datetime


class UserInvite(RequestModel):
    email: str
    role: Role
    property_access: PropertyAccess = "all"
    name: str | None = None


class UserUpdate(RequestModel):
    role: Role | None = None
    property_access: PropertyAccess | None = None


class UserDeactivated(Model):
    id: UserId
    status: UserStatus
    deactivated_at: dt.datetime


# --- benchmarks ----------------------------------------------------------------------------------


class Period(Model):
    start: dt.date | None = None
    end: dt.date | None = None


class BenchmarkScore(Model):
    """One standard's result; which fields are present depends on `standard` (spec table)."""

    standard: str
    score: float | None = None
    percentile: float | None = None
    peer_group: str | None = None
    peer_count: int | None = None
    eligible: bool | None = None
    certification_eligible: bool | None = None
    grade: str | None = None
    country_methodology: str | None = None
    stranding_year_1_5c: int | None = None
    stranding_year_2c: int | None = None
    current_intensity_kgco2e_m2: float | None = None
    target_intensity_kgco2e_m2: float | None = None
    pathway: str | None = None
    applicable: bool | None = None
    scheme: str | None = None
    reason: str | None = None
    calculated_at: dt.datetime | None = None


class BenchmarkResult(Model):
    building_id: BuildingId
    reporting_period: Period | None = None
    data_quality_grade: Grade | None = None
    eui_kwh_m2: float | None = None
    carbon_intensity_kgco2e_m2: float | None = None
    scores: list[BenchmarkScore] = Field(default_factory=list)


class HistoryEntry(Model):
    period: Period
    eui_kwh_m2: float | None = None
    svc_score: float | None = None
    energy_rating_score: float | None = None


class BenchmarkHistory(Model):
    building_id: BuildingId
    history: list[HistoryEntry]


class PortfolioBenchmark(Model):
    building_count: int
    total_gfa_m2: float
    weighted_eui_kwh_m2: float | None = None
    weighted_carbon_intensity_kgco2e_m2: float | None = None
    weighted_svc_score: float | None = None
    grade_distribution: dict[str, int] = Field(default_factory=dict)


# --- reports -------------------------------------------------------------------------------------


class ReportType(Model):
    type: str
    description: str
    formats: list[str]
    scope: str


class Report(Model):
    id: ReportId
    type: str
    status: ReportStatus
    format: str
    created_at: dt.datetime
    estimated_completion: dt.datetime | None = None
    download_url: str | None = None
    download_expires_at: dt.datetime | None = None
    file_size_bytes: int | None = None
    completed_at: dt.datetime | None = None
    reporting_period: Period | None = None
    building_id: str | None = None
    filters: dict[str, str] | None = None
    template_id: str | None = None
    failed_at: dt.datetime | None = None
    reason_code: str | None = None
    reason: str | None = None


class TemplateColumn(Model):
    key: str
    title: str
    unit: str | None = None
    description: str = ""


class ReportTemplate(Model):
    id: str
    name: str
    description: str | None = None
    title: str | None = None
    columns: list[str]
    filters: dict[str, str] | None = None
    sort: str | None = None
    created_at: dt.datetime
    updated_at: dt.datetime


class ReportFilters(RequestModel):
    type: str | None = None
    country: str | None = None


class ReportRequest(RequestModel):
    type: str
    format: str
    reporting_period: dict[str, dt.date]
    building_id: str | None = None
    filters: ReportFilters | None = None
    template_id: str | None = None


class TemplateCreate(RequestModel):
    name: str
    columns: list[str]
    description: str | None = None
    title: str | None = None
    filters: ReportFilters | None = None
    sort: str | None = None


class TemplateUpdate(RequestModel):
    name: str | None = None
    columns: list[str] | None = None
    description: str | None = None
    title: str | None = None
    filters: ReportFilters | None = None
    sort: str | None = None


# --- webhooks ------------------------------------------------------------------------------------


class WebhookStatus(StrEnum):
    ENABLED = "enabled"
    PAUSED = "paused"
    DISABLED = "disabled"


class Webhook(Model):
    """A stored subscription (docs/decisions.md (webhooks section)). The signing secret is write-only: the
    service returns it once, on creation, only when it generated it (see `WebhookCreated`)."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    id: str
    url: str
    description: str | None = None
    events: list[str]
    status: WebhookStatus
    created_at: dt.datetime
    updated_at: dt.datetime | None = None
    paused_at: dt.datetime | None = None
    disabled_at: dt.datetime | None = None
    disabled_reason: str | None = None
    last_success_at: dt.datetime | None = None
    failing_since: dt.datetime | None = None


class WebhookCreated(Webhook):
    """The creation answer: `secret` holds the service-generated secret (masked in repr/str)."""

    model_config = ConfigDict(extra="ignore", arbitrary_types_allowed=True, defer_build=True)

    secret: Any = None

    def model_post_init(self, context: Any) -> None:
        from bpsync.client.auth import Secret

        if isinstance(self.secret, str):
            self.secret = Secret(self.secret)


class WebhookCreate(RequestModel):
    url: str
    events: list[str]
    secret: str | None = None
    description: str | None = None

    def __repr__(self) -> str:
        return f"WebhookCreate(url={self.url!r}, events={self.events!r}, secret='********')"

    __str__ = __repr__


class WebhookUpdate(RequestModel):
    url: str | None = None
    events: list[str] | None = None
    secret: str | None = None
    description: str | None = None

    def __repr__(self) -> str:
        return f"WebhookUpdate(url={self.url!r}, events={self.events!r})"

    __str__ = __repr__


class DeliveryAttempt(Model):
    number: int
    attempted_at: dt.datetime
    status_code: int | None = None
    response_body: str | None = None
    latency_ms: int
    succeeded: bool
    failure_reason: str | None = None
    error_message: str | None = None


class Delivery(Model):
    id: str
    event_id: str
    event_type: str
    event_created_at: dt.datetime
    status: str
    attempt_count: int
    next_attempt_at: dt.datetime | None = None
    completed_at: dt.datetime | None = None
    created_at: dt.datetime
    attempts: list[DeliveryAttempt] = Field(default_factory=list)
    payload: dict[str, Any] | None = None
