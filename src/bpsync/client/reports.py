"""Reports: types, generate (202, asynchronous), status, list, wait, download with progress."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from bpsync.client.errors import BPSyncError
from bpsync.client.models import (
    Report,
    ReportRequest,
    ReportStatus,
    ReportTemplate,
    ReportType,
    TemplateColumn,
    TemplateCreate,
    TemplateUpdate,
)
from bpsync.client.pagination import AsyncPaginator
from bpsync.client.resource import Resource, build, segment

Progress = Callable[[int, int | None], None]  # (bytes so far, total or None)


class ReportFailedError(BPSyncError):
    def __init__(self, report: Report) -> None:
        self.report = report
        why = f": {report.reason_code} ({report.reason})" if report.reason_code else ""
        super().__init__(f"report {report.id} failed{why}")


class Reports(Resource):
    async def types(self) -> list[ReportType]:
        body = await self._client.get_json("/v1/reports/types")
        return [ReportType.model_validate(item) for item in body["data"]]

    async def create(
        self, body: ReportRequest | Mapping[str, Any] | None = None, **fields: Any
    ) -> Report:
        """Ask for a report (202). Generation spends the `reports` bucket as well as the key's."""
        request = build(ReportRequest, body, fields)
        return await self._send(Report, "POST", "/v1/reports", request.body())

    async def get(self, report_id: str) -> Report:
        return await self._get(Report, f"/v1/reports/{segment(report_id)}")

    def list(
        self,
        *,
        status: str | None = None,
        type: str | None = None,
        page: int = 1,
        per_page: int = 50,
    ) -> AsyncPaginator[Report]:
        """Newest first."""
        params = {"filter[status]": status, "filter[type]": type}
        return self._list(Report, "/v1/reports", params, page=page, per_page=per_page)

    # Saved templates for custom reports (src/bpservice/api/reports.py).

    async def template_columns(self) -> list[TemplateColumn]:
        body = await self._client.get_json("/v1/reports/templates/columns")
        return [TemplateColumn.model_validate(item) for item in body["data"]]

    def templates(self, *, page: int = 1, per_page: int = 50) -> AsyncPaginator[ReportTemplate]:
        path = "/v1/reports/templates"
        return self._list(ReportTemplate, path, page=page, per_page=per_page)

    async def get_template(self, template_id: str) -> ReportTemplate:
        return await self._get(ReportTemplate, f"/v1/reports/templates/{segment(template_id)}")

    async def create_template(
        self, body: TemplateCreate | Mapping[str, Any] | None = None, **fields: Any
    ) -> ReportTemplate:
        request = build(TemplateCreate, body, fields)
        path = "/v1/reports/templates"
        return await self._send(ReportTemplate, "POST", path, request.body())

    async def update_template(
        self,
        template_id: str,
        body: TemplateUpdate | Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> ReportTemplate:
        request = build(TemplateUpdate, body, fields)
        path = f"/v1/reports/templates/{segment(template_id)}"
        return await self._send(ReportTemplate, "PATCH", path, request.body(partial=True))

    async def delete_template(self, template_id: str) -> None:
        await self._client.request("DELETE", f"/v1/reports/templates/{segment(template_id)}")

    async def wait(
        self,
        report_id: str,
        *,
        timeout: float = 600.0,
        interval: float = 1.0,
        max_interval: float = 15.0,
    ) -> Report:
        """Poll until the report is complete or failed; waits grow from `interval` towards
        `max_interval` (ETags make unchanged polls cheap: a 304 does not count)."""
        client = self._client
        deadline = client.clock() + timeout
        delay = interval
        while True:
            report = await self.get(report_id)
            if report.status == ReportStatus.COMPLETE:
                return report
            if report.status == ReportStatus.FAILED:
                raise ReportFailedError(report)
            if client.clock() + delay > deadline:
                raise TimeoutError(f"report {report_id} not ready after {timeout:.0f} s")
            await client.sleep(delay)
            delay = min(max_interval, delay * 1.5)

    async def download(
        self,
        report_id: str,
        destination: Path | str,
        *,
        progress: Progress | None = None,
        chunk_size: int = 64 * 1024,
    ) -> Path:
        """Stream the file to `destination`: an existing directory, or a path written with a
        trailing slash (created if missing), gets the service's file name; anything else is the
        file's path. Written to a temporary name first and renamed when complete, so a broken
        download leaves no file that looks whole."""
        as_folder = isinstance(destination, str) and destination.endswith(("/", os.sep))
        folder = Path(destination)
        path = f"/v1/reports/{segment(report_id)}/download"
        response = await self._client.request("GET", path, stream=True)
        try:
            target = folder
            if as_folder:
                folder.mkdir(parents=True, exist_ok=True)
            if as_folder or folder.is_dir():
                target = folder / _file_name(response.headers, report_id)
            total = response.headers.get("content-length")
            size = int(total) if total and total.isdigit() else None
            partial = target.with_name(target.name + ".part")
            done = 0
            with open(partial, "wb") as fh:
                async for chunk in response.aiter_bytes(chunk_size):
                    fh.write(chunk)
                    done += len(chunk)
                    if progress is not None:
                        progress(done, size)
            os.replace(partial, target)
            return target
        finally:
            await response.aclose()


def _file_name(headers: Mapping[str, str], report_id: str) -> str:
    disposition = headers.get("content-disposition", "")
    for part in disposition.split(";"):
        key, _, value = part.strip().partition("=")
        if key.lower() == "filename" and value:
            name = os.path.basename(value.strip().strip('"'))
            if name and name not in (".", ".."):
                return name
    ext = {
        "application/pdf": "pdf",
        "text/csv": "csv",
        "application/json": "json",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    }.get(headers.get("content-type", "").split(";")[0].strip(), "bin")
    return f"{report_id}-{dt.date.today().isoformat()}.{ext}"
