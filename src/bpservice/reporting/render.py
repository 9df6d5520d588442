"""Document -> file bytes for a format."""

from __future__ import annotations

from collections.abc import Callable

from bpservice.reporting.document import Document
from bpservice.reporting.pdf import render_pdf
from bpservice.reporting.tabular import render_csv, render_json, render_xlsx

RENDERERS: dict[str, Callable[[Document], bytes]] = {
    "pdf": render_pdf,
    "xlsx": render_xlsx,
    "csv": render_csv,
    "json": render_json,
}


def render(document: Document, fmt: str) -> bytes:
    return RENDERERS[fmt](document)
