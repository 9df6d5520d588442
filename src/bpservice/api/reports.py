"""Reports: the types catalogue, requests (202, generated in the background by workers/reports.py),
status, signed downloads, the list (newest first), and saved templates for custom reports.
Choices the spec leaves open are recorded in docs/decisions.md (reports section)."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field, model_validator
from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from bpservice.api.deps import (
    Clock,
    Pagination,
    ReadSession,
    WriteSession,
    paginate,
    require,
)
from bpservice.api.responses import errors
from bpservice.api.schemas import Data, Page, non_nullable
from bpservice.api.schemas import Request as RequestBody
from bpservice.api.types import Country, ISODate, Name, ShortText, UseType
from bpservice.auth import Principal
from bpservice.db.models import Building, Property
from bpservice.db.report_models import Report, ReportFile, ReportTemplate
from bpservice.domain import compliance
from bpservice.domain.benchmarks import month_end
from bpservice.errors import APIError, not_found
from bpservice.ids import new_id
from bpservice.reporting import signing
from bpservice.reporting.catalogue import (
    MAX_TEMPLATE_COLUMNS,
    REPORT_TYPES,
    REPORT_TYPES_BY_NAME,
    TEMPLATE_COLUMNS,
)
from bpservice.reporting.gather import scoped_buildings

router = APIRouter(prefix="/v1/reports", tags=["reports"])

Read = Annotated[Principal, Depends(require("reports:read"))]
Write = Annotated[Principal, Depends(require("reports:write", write=True))]

ReportTypeName = Literal[
    "benchmark_certificate",
    "portfolio_summary",
    "compliance_esg",
    "compliance_ll97",
    "compliance_berdo",
    "custom",
]
FormatName = Literal["pdf", "xlsx", "csv", "json"]
ReportStatus = Literal["processing", "complete", "failed"]

# Types whose figures are for the requested months exactly (whole months, at most 12).
PERIOD_EXACT_TYPES = frozenset({"compliance_esg", "compliance_ll97", "compliance_berdo"})
MAX_PERIOD_DAYS = 366

# Estimated generation time. bench/bench_reports.py measured at most 2.7 s for a 100-building
# portfolio report on 2 cores (under 0.2 s for building reports); the estimate is about twice that
# so a client that waits for it rarely has to poll again.
ESTIMATE_BASE_SECONDS = 2
ESTIMATE_PER_BUILDING_SECONDS = 0.04


# --- schemas -------------------------------------------------------------------------------------


class ReportTypeOut(BaseModel):
    type: str
    description: str
    formats: list[str]
    scope: Literal["building", "organisation"]


class ReportingPeriod(RequestBody):
    start: ISODate
    end: ISODate

    @model_validator(mode="after")
    def _ordered(self) -> ReportingPeriod:
        if self.end < self.start:
            raise ValueError("reporting_period.end must be on or after reporting_period.start")
        return self


class ReportFilters(RequestBody):
    type: UseType | None = Field(None, description="Primary use type of the buildings")
    country: Country | None = Field(None, description="Country of the buildings' properties")


class ReportCreate(RequestBody):
    type: ReportTypeName
    format: FormatName
    reporting_period: ReportingPeriod
    building_id: str | None = Field(None, max_length=64, description="Building-scoped types only")
    filters: ReportFilters | None = Field(None, description="Organisation-scoped types only")
    template_id: str | None = Field(
        None, max_length=64, description="custom only: a saved template"
    )


class PeriodOut(BaseModel):
    start: dt.date
    end: dt.date


class ReportAccepted(BaseModel):
    id: str
    type: str
    status: ReportStatus
    format: str
    created_at: dt.datetime
    estimated_completion: dt.datetime


class ReportSummary(ReportAccepted):
    reporting_period: PeriodOut
    building_id: str | None
    filters: dict[str, str] | None
    template_id: str | None
    file_size_bytes: int | None
    completed_at: dt.datetime | None
    failed_at: dt.datetime | None
    reason_code: str | None = Field(description="Why the report failed (failed only)")
    reason: str | None = Field(description="Why the report failed, in words (failed only)")


class ReportOut(ReportSummary):
    download_url: str | None = Field(
        description="Signed URL of the download endpoint, valid 24 h; read the report again for a "
        "fresh one (complete only)"
    )
    download_expires_at: dt.datetime | None


class TemplateColumnOut(BaseModel):
    key: str
    title: str
    unit: str | None
    description: str


# The catalogue's keys, stated in the document (the handler refuses others, unknown_column).
ColumnKey = Annotated[
    str, Field(max_length=64, json_schema_extra={"enum": sorted(TEMPLATE_COLUMNS)})
]
SortKey = Annotated[
    str,
    Field(
        max_length=64,
        pattern=r"^-?[a-z0-9_]+$",
        json_schema_extra={"pattern": "^-?(?:" + "|".join(sorted(TEMPLATE_COLUMNS)) + ")$"},
    ),
]


class TemplateCreate(RequestBody):
    name: Name
    description: Annotated[str, Field(max_length=1000)] | None = None
    title: ShortText | None = None
    columns: list[ColumnKey] = Field(
        min_length=1, max_length=MAX_TEMPLATE_COLUMNS, json_schema_extra={"uniqueItems": True}
    )
    filters: ReportFilters | None = None
    sort: SortKey | None = Field(None, description="A column key; a leading - sorts descending")


class TemplateUpdate(RequestBody):
    model_config = ConfigDict(extra="forbid", json_schema_extra=non_nullable("name", "columns"))

    name: Name | None = None
    description: Annotated[str, Field(max_length=1000)] | None = None
    title: ShortText | None = None
    columns: list[ColumnKey] | None = Field(
        None, min_length=1, max_length=MAX_TEMPLATE_COLUMNS, json_schema_extra={"uniqueItems": True}
    )
    filters: ReportFilters | None = None
    sort: SortKey | None = None

    @model_validator(mode="after")
    def _not_null(self) -> TemplateUpdate:
        for name in ("name", "columns"):
            if name in self.model_fields_set and getattr(self, name) is None:
                raise ValueError(f"{name} cannot be null")
        return self


class TemplateOut(BaseModel):
    id: str
    name: str
    description: str | None
    title: str | None
    columns: list[str]
    filters: dict[str, str] | None
    sort: str | None
    created_at: dt.datetime
    updated_at: dt.datetime


# --- helpers -------------------------------------------------------------------------------------


def _invalid(field: str, code: str, message: str, **extra: Any) -> APIError:
    return APIError(
        422,
        "validation_error",
        message,
        details=[{"field": field, "code": code, "message": message}],
        **extra,
    )


def _base_url(request: Request) -> str:
    """Where download links point. The `Host` header is the client's to choose, so it never
    decides: the configured public address, else the socket this server is bound to (decisions, "Host header").
    The scheme follows `X-Forwarded-Proto` only when the server trusts the sending proxy."""
    configured = request.app.state.settings.public_base_url
    if configured:
        return configured.rstrip("/")
    server = request.scope.get("server")
    if server and server[1] is not None:
        host, port = server
        host = f"[{host}]" if ":" in host else host
        return f"{request.url.scheme}://{host}:{port}"
    return str(request.base_url).rstrip("/")  # a transport with no socket (in-process tests)


def _visible(query: Any, principal: Principal) -> Any:
    """Reports of the caller's organisation and environment. A caller limited to some properties
    sees building reports of those properties and organisation reports they requested."""
    query = query.where(
        Report.org_id == principal.org_id, Report.environment == principal.environment
    )
    if principal.property_access is not None:
        query = query.where(
            or_(
                Report.property_id.in_(list(principal.property_access)),
                Report.requested_by == principal.user_id,
            )
        )
    return query


def _load_report(session: Session, principal: Principal, report_id: str) -> Report:
    report = session.scalars(
        _visible(select(Report), principal).where(Report.id == report_id)
    ).first()
    if report is None:
        raise not_found("report", report_id)
    return report


def summary_view(report: Report) -> dict[str, Any]:
    return {
        "id": report.id,
        "type": report.type,
        "status": report.status,
        "format": report.format,
        "created_at": report.created_at,
        "estimated_completion": report.estimated_completion,
        "reporting_period": {"start": report.period_start, "end": report.period_end},
        "building_id": report.building_id,
        "filters": report.filters,
        "template_id": report.template_id,
        "file_size_bytes": report.file_size_bytes,
        "completed_at": report.completed_at,
        "failed_at": report.failed_at,
        "reason_code": report.failure_code,
        "reason": report.failure_reason,
    }


def report_view(report: Report, key: bytes, base_url: str, now: dt.datetime) -> dict[str, Any]:
    view = summary_view(report)
    view["download_url"] = view["download_expires_at"] = None
    if report.status == "complete":
        view["download_url"], view["download_expires_at"] = signing.issue(
            key, base_url, report.id, now
        )
    return view


def _check_period(body: ReportCreate, today: dt.date) -> None:
    period = body.reporting_period
    if period.end > today:
        raise _invalid(
            "reporting_period.end",
            "future_date",
            f"reporting_period.end {period.end} is after today ({today}).",
        )
    if (period.end - period.start).days + 1 > MAX_PERIOD_DAYS:
        raise _invalid(
            "reporting_period",
            "period_too_long",
            f"A reporting period covers at most {MAX_PERIOD_DAYS} days.",
        )
    if body.type in PERIOD_EXACT_TYPES and (
        period.start.day != 1 or period.end != month_end(period.end)
    ):
        raise _invalid(
            "reporting_period",
            "whole_months_required",
            f"{body.type} reports cover whole calendar months: start on the 1st and end on the "
            "last day of a month.",
        )
    if body.type in ("compliance_ll97", "compliance_berdo"):
        # Both laws are calendar-year filings: a part year is refused, never annualised and
        # compared with the annual limit (docs/decisions.md CS3).
        try:
            year = compliance.require_calendar_year(period.start, period.end)
            if body.type == "compliance_ll97":
                compliance.ll97_period(year)
            else:
                compliance.berdo_period_index(year)
                compliance.berdo_electricity(year)
        except compliance.ComplianceError as exc:
            raise _invalid("reporting_period", exc.code, exc.message) from None


def _check_building(session: Session, principal: Principal, body: ReportCreate) -> Building:
    building = session.get(Building, body.building_id) if body.building_id else None
    if (
        building is None
        or building.org_id != principal.org_id
        or building.environment != principal.environment
        or not principal.can_see_property(building.property_id)
    ):
        raise _invalid(
            "building_id",
            "not_found",
            f"No building with id {body.building_id!r} in this organisation and environment.",
        )
    if body.type in ("compliance_ll97", "compliance_berdo"):
        areas = compliance.areas_by_use_type(
            building.gfa_m2, building.primary_use_type, building.use_types
        )
        unmapped = (
            compliance.ll97_unmapped_use_types(areas)
            if body.type == "compliance_ll97"
            else compliance.berdo_unmapped_use_types(areas)
        )
        if unmapped:
            scheme = (
                "a Portfolio Manager property type (LL97)"
                if body.type == "compliance_ll97"
                else "a BERDO type"
            )
            raise _invalid(
                "building_id",
                "unmapped_use_type",
                f"The building's use type(s) {', '.join(unmapped)} have no equivalent in {scheme}; "
                "give the building a use_types breakdown with specific uses.",
            )
        # Only a building the law covers gets a verdict (docs/decisions.md CS4).
        prop = session.get(Property, building.property_id)
        rule = compliance.applicability(
            compliance.LL97 if body.type == "compliance_ll97" else compliance.BERDO,
            country=prop.country if prop else None,
            state=prop.state if prop else None,
            city=prop.city if prop else None,
            gfa_m2=building.gfa_m2,
            use_types=[u for u, _ in areas],
        )
        if not rule.applicable:
            raise _invalid("building_id", "not_applicable", f"Not applicable: {rule.reason}")
    return building


def _template_dict(t: ReportTemplate) -> dict[str, Any]:
    return {
        "id": t.id,
        "name": t.name,
        "description": t.description,
        "title": t.title,
        "columns": list(t.columns),
        "filters": t.filters,
        "sort": t.sort,
        "created_at": t.created_at,
        "updated_at": t.updated_at,
    }


def _load_template(session: Session, principal: Principal, template_id: str) -> ReportTemplate:
    t = session.get(ReportTemplate, template_id)
    if t is None or t.org_id != principal.org_id or t.environment != principal.environment:
        raise not_found("report template", template_id)
    return t


def _filters_dict(filters: ReportFilters | None) -> dict[str, str] | None:
    if filters is None:
        return None
    out = {k: v for k, v in filters.model_dump().items() if v is not None}
    return out or None


def _check_columns(columns: list[str], sort: str | None) -> None:
    unknown = [c for c in columns if c not in TEMPLATE_COLUMNS]
    if unknown:
        raise _invalid(
            "columns",
            "unknown_column",
            f"Unknown column(s): {', '.join(unknown[:10])}; GET /v1/reports/templates/columns "
            "lists the columns.",
        )
    if len(set(columns)) != len(columns):
        raise _invalid("columns", "duplicate_column", "A column may appear once.")
    if sort is not None and sort.lstrip("-") not in TEMPLATE_COLUMNS:
        raise _invalid("sort", "unknown_column", f"Cannot sort by unknown column {sort!r}.")


# --- report types and reports --------------------------------------------------------------------


@router.get("/types", response_model=Data[list[ReportTypeOut]], responses=errors())
def list_report_types(principal: Read) -> dict:
    return {
        "data": [
            {
                "type": t.type,
                "description": t.description,
                "formats": list(t.formats),
                "scope": t.scope,
            }
            for t in REPORT_TYPES
        ]
    }


@router.post(
    "",
    status_code=202,
    response_model=Data[ReportAccepted],
    responses=errors(400, 422),
    summary="Request a report (generated in the background)",
)
def create_report(
    body: ReportCreate, principal: Write, session: WriteSession, clock: Clock, response: Response
) -> dict:
    now = clock()
    spec = REPORT_TYPES_BY_NAME[body.type]
    if body.format not in spec.formats:
        raise _invalid(
            "format",
            "unsupported_format",
            f"{body.type} reports are generated as {', '.join(spec.formats)}, not {body.format}.",
            allowed_formats=list(spec.formats),
        )
    _check_period(body, now.date())
    building: Building | None = None
    template: dict[str, Any] | None = None
    filters = _filters_dict(body.filters)
    if spec.scope == "building":
        if body.building_id is None:
            raise _invalid("building_id", "required", f"{body.type} reports need a building_id.")
        if body.filters is not None:
            raise _invalid(
                "filters", "not_allowed", f"{body.type} reports are for one building; omit filters."
            )
        building = _check_building(session, principal, body)
        in_scope = 1
    else:
        if body.building_id is not None:
            raise _invalid(
                "building_id",
                "not_allowed",
                f"{body.type} reports cover the organisation; use filters instead of building_id.",
            )
        if body.type == "custom":
            if body.template_id is None:
                raise _invalid("template_id", "required", "custom reports need a template_id.")
            t = session.get(ReportTemplate, body.template_id)
            if t is None or t.org_id != principal.org_id or t.environment != principal.environment:
                raise _invalid(
                    "template_id",
                    "not_found",
                    f"No report template with id {body.template_id!r} in this environment.",
                )
            template = _template_dict(t)
            template.pop("created_at"), template.pop("updated_at")
            filters = filters or t.filters
        access = (
            sorted(principal.property_access) if principal.property_access is not None else None
        )
        in_scope = len(
            scoped_buildings(
                session, principal.org_id, principal.environment, filters or {}, access
            )
        )
    if body.template_id is not None and body.type != "custom":
        raise _invalid("template_id", "not_allowed", "Only custom reports take a template_id.")

    seconds = ESTIMATE_BASE_SECONDS + ESTIMATE_PER_BUILDING_SECONDS * in_scope
    report = Report(
        id=new_id("report"),
        org_id=principal.org_id,
        environment=principal.environment,
        type=body.type,
        format=body.format,
        status="processing",
        period_start=body.reporting_period.start,
        period_end=body.reporting_period.end,
        building_id=building.id if building else None,
        property_id=building.property_id if building else None,
        filters=filters,
        template_id=body.template_id,
        template=template,
        property_access=(
            sorted(principal.property_access) if principal.property_access is not None else None
        ),
        requested_by=principal.user_id,
        created_at=now,
        estimated_completion=(now + dt.timedelta(seconds=seconds)).replace(microsecond=0),
        attempts=0,
    )
    session.add(report)
    session.flush()
    response.headers["Location"] = f"/v1/reports/{report.id}"
    return {
        "data": {
            "id": report.id,
            "type": report.type,
            "status": report.status,
            "format": report.format,
            "created_at": report.created_at,
            "estimated_completion": report.estimated_completion,
        }
    }


@router.get("", response_model=Page[ReportSummary], responses=errors(422))
def list_reports(
    principal: Read,
    session: ReadSession,
    pages: Pagination,
    status: Annotated[ReportStatus | None, Query(alias="filter[status]")] = None,
    type_: Annotated[ReportTypeName | None, Query(alias="filter[type]")] = None,
) -> dict:
    query = _visible(select(Report), principal)
    if status is not None:
        query = query.where(Report.status == status)
    if type_ is not None:
        query = query.where(Report.type == type_)
    query = query.order_by(Report.created_at.desc(), Report.id.desc())
    rows, total = paginate(session, query, pages)
    return {"data": [summary_view(r) for r in rows], "meta": pages.meta(total)}


# --- templates (before /{report_id} so "templates" is not taken for an id) -----------------------


@router.get("/templates/columns", response_model=Data[list[TemplateColumnOut]], responses=errors())
def list_template_columns(principal: Read) -> dict:
    return {
        "data": [
            {
                "key": key,
                "title": c.column.title,
                "unit": c.column.unit,
                "description": c.description,
            }
            for key, c in TEMPLATE_COLUMNS.items()
        ]
    }


@router.get("/templates", response_model=Page[TemplateOut], responses=errors(422))
def list_templates(principal: Read, session: ReadSession, pages: Pagination) -> dict:
    query = (
        select(ReportTemplate)
        .where(
            ReportTemplate.org_id == principal.org_id,
            ReportTemplate.environment == principal.environment,
        )
        .order_by(ReportTemplate.created_at, ReportTemplate.id)
    )
    rows, total = paginate(session, query, pages)
    return {"data": [_template_dict(t) for t in rows], "meta": pages.meta(total)}


@router.post(
    "/templates", status_code=201, response_model=Data[TemplateOut], responses=errors(400, 422)
)
def create_template(
    body: TemplateCreate, principal: Write, session: WriteSession, clock: Clock
) -> dict:
    _check_columns(body.columns, body.sort)
    now = clock()
    template = ReportTemplate(
        id=new_id("report_template"),
        org_id=principal.org_id,
        environment=principal.environment,
        name=body.name,
        description=body.description,
        title=body.title,
        columns=list(body.columns),
        filters=_filters_dict(body.filters),
        sort=body.sort,
        created_at=now,
        updated_at=now,
    )
    session.add(template)
    session.flush()
    return {"data": _template_dict(template)}


@router.get("/templates/{template_id}", response_model=Data[TemplateOut], responses=errors(404))
def get_template(template_id: str, principal: Read, session: ReadSession) -> dict:
    return {"data": _template_dict(_load_template(session, principal, template_id))}


@router.patch(
    "/templates/{template_id}", response_model=Data[TemplateOut], responses=errors(400, 404, 422)
)
def update_template(
    template_id: str, body: TemplateUpdate, principal: Write, session: WriteSession, clock: Clock
) -> dict:
    template = _load_template(session, principal, template_id)
    fields = body.model_fields_set
    columns = body.columns if "columns" in fields and body.columns else list(template.columns)
    sort = body.sort if "sort" in fields else template.sort
    _check_columns(columns, sort)
    changed = False
    for name in ("name", "description", "title", "sort"):
        if name in fields and getattr(body, name) != getattr(template, name):
            setattr(template, name, getattr(body, name))
            changed = True
    if "columns" in fields and columns != list(template.columns):
        template.columns = columns
        changed = True
    if "filters" in fields:
        filters = _filters_dict(body.filters)
        if filters != template.filters:
            template.filters = filters
            changed = True
    if changed:
        template.updated_at = clock()
    session.flush()
    return {"data": _template_dict(template)}


@router.delete("/templates/{template_id}", status_code=204, responses=errors(404))
def delete_template(template_id: str, principal: Write, session: WriteSession) -> Response:
    session.delete(_load_template(session, principal, template_id))
    return Response(status_code=204)


# --- one report ----------------------------------------------------------------------------------


@router.get("/{report_id}", response_model=Data[ReportOut], responses=errors(404))
def get_report(
    report_id: str, request: Request, principal: Read, session: ReadSession, clock: Clock
) -> dict:
    report = _load_report(session, principal, report_id)
    now = clock()
    key = signing.signing_key(request.app.state.db, now)
    return {"data": report_view(report, key, _base_url(request), now)}


@router.get(
    "/{report_id}/download",
    responses={
        200: {
            "description": "The report file",
            "content": {"application/pdf": {}, "text/csv": {}, "application/json": {}},
        },
        **errors(403, 404, 409),
    },
    response_class=Response,
    summary="Download a generated report (signed URL or bearer token)",
)
def download_report(
    report_id: str,
    request: Request,
    session: ReadSession,
    clock: Clock,
    expires: Annotated[str | None, Query(max_length=20)] = None,
    signature: Annotated[str | None, Query(max_length=128)] = None,
) -> Response:
    """The download URL in a complete report carries `expires` and `signature` and works on its
    own for 24 hours (no Authorization header needed). With a bearer token (scope reports:read)
    the file can also be fetched without them. A signed URL is checked even when a token is sent,
    so an expired or altered URL is refused (403) either way."""
    now = clock()
    principal: Principal | None = request.scope.get("state", {}).get("principal")
    if request.headers.get("authorization") and principal is None:
        error = APIError(401, "unauthorized", "Missing or invalid credentials.")
        error.headers = {"WWW-Authenticate": 'Bearer realm="bpservice"'}
        raise error
    if principal is not None and "reports:read" not in principal.scopes:
        raise APIError(
            403,
            "insufficient_scope",
            "This request needs the reports:read scope, which the credentials do not grant.",
            required_scope="reports:read",
        )
    signed = expires is not None or signature is not None
    if signed:
        key = signing.signing_key(request.app.state.db, now)
        try:
            signing.verify(key, report_id, expires, signature, now)
        except signing.SignatureProblem as problem:
            extra = {"expired_at": problem.expired_at} if problem.expired_at else {}
            raise APIError(403, problem.code, problem.message, **extra) from None
    elif principal is None:
        error = APIError(
            401,
            "unauthorized",
            "Use the signed download_url from GET /v1/reports/{id}, or send "
            "'Authorization: Bearer <API key or access token>'.",
        )
        error.headers = {"WWW-Authenticate": 'Bearer realm="bpservice"'}
        raise error

    if principal is not None:
        report = _load_report(session, principal, report_id)
    else:
        found = session.get(Report, report_id)
        if found is None:
            raise not_found("report", report_id)
        report = found
    if report.status == "processing":
        raise APIError(
            409,
            "report_not_ready",
            "The report is still being generated.",
            estimated_completion=report.estimated_completion,
        )
    if report.status == "failed":
        raise APIError(
            409,
            "report_failed",
            f"The report failed and has no file: {report.failure_reason}",
            reason_code=report.failure_code,
        )
    content = session.scalars(
        select(ReportFile.content).where(ReportFile.report_id == report.id)
    ).one()
    return Response(
        content,
        media_type=report.content_type,
        headers={
            "Content-Disposition": f'attachment; filename="{report.filename}"',
            # The URL is a credential: keep the file out of shared caches.
            "Cache-Control": "private, no-store",
        },
    )
