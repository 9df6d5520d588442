"""PDF rendering of a Document with reportlab's platypus: a header band, fact blocks, tables that
repeat their heading row across pages, and a footer with the report id and page numbers."""

from __future__ import annotations

import io
from typing import Any
from xml.sax.saxutils import escape

from reportlab.lib import colors
from reportlab.lib.enums import TA_RIGHT
from reportlab.lib.pagesizes import A4, landscape
from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet
from reportlab.lib.units import mm
from reportlab.platypus import (
    BaseDocTemplate,
    Frame,
    KeepTogether,
    PageTemplate,
    Paragraph,
    Spacer,
    TableStyle,
)
from reportlab.platypus import Table as PdfTable

from bpservice.reporting.document import Document, Facts, Note, Table, fact_text, format_value

INK = colors.HexColor("#1f2933")
ACCENT = colors.HexColor("#0b6e4f")
MUTED = colors.HexColor("#616e7c")
RULE = colors.HexColor("#cbd2d9")
BAND = colors.HexColor("#e6f4ef")
WARN = colors.HexColor("#b44d12")

_base = getSampleStyleSheet()
STYLES = {
    "title": ParagraphStyle(
        "title",
        parent=_base["Title"],
        textColor=ACCENT,
        fontSize=20,
        leading=24,
        alignment=0,
        spaceAfter=2,
    ),
    "subtitle": ParagraphStyle(
        "subtitle", parent=_base["Normal"], fontSize=11, leading=14, textColor=INK, spaceAfter=6
    ),
    "h2": ParagraphStyle(
        "h2",
        parent=_base["Heading2"],
        fontSize=12,
        leading=15,
        textColor=ACCENT,
        spaceBefore=8,
        spaceAfter=4,
        # A heading never ends a page alone: it moves with the block it introduces.
        keepWithNext=1,
    ),
    # A heading inside a KeepTogether block (facts, tables) needs no keepWithNext of its own.
    "h2_block": ParagraphStyle(
        "h2_block",
        parent=_base["Heading2"],
        fontSize=12,
        leading=15,
        textColor=ACCENT,
        spaceBefore=8,
        spaceAfter=4,
    ),
    "body": ParagraphStyle("body", parent=_base["Normal"], fontSize=9, leading=12, textColor=INK),
    "small": ParagraphStyle(
        "small", parent=_base["Normal"], fontSize=7.5, leading=9.5, textColor=MUTED
    ),
    "cell": ParagraphStyle("cell", parent=_base["Normal"], fontSize=8, leading=10, textColor=INK),
    "cell_num": ParagraphStyle(
        "cell_num",
        parent=_base["Normal"],
        fontSize=8,
        leading=10,
        textColor=INK,
        alignment=TA_RIGHT,
    ),
    "head": ParagraphStyle(
        "head",
        parent=_base["Normal"],
        fontName="Helvetica-Bold",
        fontSize=7.5,
        leading=9.5,
        textColor=colors.white,
    ),
    "head_num": ParagraphStyle(
        "head_num",
        parent=_base["Normal"],
        fontName="Helvetica-Bold",
        fontSize=7.5,
        leading=9.5,
        textColor=colors.white,
        alignment=TA_RIGHT,
    ),
    "fact_label": ParagraphStyle(
        "fact_label", parent=_base["Normal"], fontSize=9, leading=12, textColor=MUTED
    ),
    "fact_value": ParagraphStyle(
        "fact_value", parent=_base["Normal"], fontSize=9, leading=12, textColor=INK
    ),
    "fact_big": ParagraphStyle(
        "fact_big",
        parent=_base["Normal"],
        fontName="Helvetica-Bold",
        fontSize=12,
        leading=15,
        textColor=INK,
    ),
    "warning": ParagraphStyle(
        "warning", parent=_base["Normal"], fontSize=9, leading=12, textColor=WARN
    ),
}

_NUMERIC = ("number", "integer", "usd", "percent")
# Tables wider than this many columns are printed on landscape pages.
_LANDSCAPE_COLUMNS = 7


def _p(text: str, style: str) -> Paragraph:
    return Paragraph(escape(text), STYLES[style])


def _facts(block: Facts, width: float) -> list[Any]:
    value_style = "fact_big" if block.emphasis else "fact_value"
    rows = [
        [_p(label, "fact_label"), _p(fact_text(value), value_style)] for label, value in block.items
    ]
    table = PdfTable(rows, colWidths=[width * 0.32, width * 0.68])
    style = [
        ("VALIGN", (0, 0), (-1, -1), "MIDDLE"),
        ("LINEBELOW", (0, 0), (-1, -2), 0.3, RULE),
        ("TOPPADDING", (0, 0), (-1, -1), 3),
        ("BOTTOMPADDING", (0, 0), (-1, -1), 3),
    ]
    if block.emphasis:
        style.append(("BACKGROUND", (0, 0), (-1, -1), BAND))
    table.setStyle(TableStyle(style))
    return [KeepTogether([_p(block.title, "h2_block"), table])]


def _table(block: Table, width: float) -> list[Any]:
    numeric = [c.kind in _NUMERIC for c in block.columns]
    head = [
        _p(c.heading, "head_num" if n else "head")
        for c, n in zip(block.columns, numeric, strict=True)
    ]
    body = [
        [
            _p(format_value(row.get(c.key), c), "cell_num" if n else "cell")
            for c, n in zip(block.columns, numeric, strict=True)
        ]
        for row in block.rows
    ]
    data = [head, *body]
    if block.totals is not None:
        data.append(
            [
                _p(
                    format_value(block.totals.get(c.key), c) if c.key in block.totals else "",
                    "cell_num" if n else "cell",
                )
                for c, n in zip(block.columns, numeric, strict=True)
            ]
        )
    # Each column gets room in proportion to its longest value (clamped); headings wrap.
    weights = []
    for column, n in zip(block.columns, numeric, strict=True):
        longest = max(
            [len(w) for w in column.heading.split()]
            + [len(format_value(row.get(column.key), column)) for row in block.rows[:300]]
        )
        weights.append(max(6, min(longest, 30 if not n else 14)) + 2)
    col_widths = [width * w / sum(weights) for w in weights]
    table = PdfTable(data, colWidths=col_widths, repeatRows=1)
    style = [
        ("BACKGROUND", (0, 0), (-1, 0), ACCENT),
        ("VALIGN", (0, 0), (-1, -1), "TOP"),
        ("LINEBELOW", (0, 1), (-1, -1), 0.25, RULE),
        ("TOPPADDING", (0, 0), (-1, -1), 2),
        ("BOTTOMPADDING", (0, 0), (-1, -1), 2),
        ("LEFTPADDING", (0, 0), (-1, -1), 3),
        ("RIGHTPADDING", (0, 0), (-1, -1), 3),
    ]
    for i in range(1, len(body) + 1, 2):
        style.append(("BACKGROUND", (0, i), (-1, i), colors.HexColor("#f5f7fa")))
    if block.totals is not None:
        style += [
            ("LINEABOVE", (0, -1), (-1, -1), 0.8, INK),
            ("BACKGROUND", (0, -1), (-1, -1), BAND),
            ("FONTNAME", (0, -1), (-1, -1), "Helvetica-Bold"),
        ]
    table.setStyle(TableStyle(style))
    heading = _p(block.title, "h2_block")
    if not block.rows:
        return [KeepTogether([heading, _p("No rows.", "body")])]
    # The heading travels with its table: the block moves to the next page when it fits there,
    # and a table longer than a page splits under its heading, never leaving it alone at the
    # foot of a page. A short table keeps its note too.
    parts: list[Any] = [heading, table]
    if block.note and len(block.rows) <= 40:
        return [KeepTogether([*parts, Spacer(1, 2), _p(block.note, "small")])]
    out: list[Any] = [KeepTogether(parts)]
    if block.note:
        out += [Spacer(1, 2), _p(block.note, "small")]
    return out


def _note(block: Note) -> list[Any]:
    out: list[Any] = []
    if block.title:
        out.append(_p(block.title, "h2"))
    out.append(_p(block.text, "warning" if block.warning else "body"))
    return out


def render_pdf(document: Document) -> bytes:
    wide = max((len(t.columns) for t in document.tables()), default=0) > _LANDSCAPE_COLUMNS
    pagesize = landscape(A4) if wide else A4
    buffer = io.BytesIO()
    margin = 15 * mm
    report_id = dict(document.meta).get("Report") or dict(document.meta).get("Certificate no.", "")

    def decorate(canvas: Any, doc: Any) -> None:
        canvas.saveState()
        w, h = pagesize
        canvas.setFillColor(ACCENT)
        canvas.rect(0, h - 8 * mm, w, 8 * mm, stroke=0, fill=1)
        canvas.setFillColor(colors.white)
        canvas.setFont("Helvetica-Bold", 8)
        canvas.drawString(margin, h - 5.5 * mm, "Building Performance Data Service")
        canvas.drawRightString(w - margin, h - 5.5 * mm, document.title)
        canvas.setFillColor(MUTED)
        canvas.setFont("Helvetica", 7.5)
        canvas.drawString(margin, 8 * mm, f"{report_id}")
        canvas.drawRightString(w - margin, 8 * mm, f"Page {doc.page}")
        canvas.restoreState()

    doc = BaseDocTemplate(
        buffer,
        pagesize=pagesize,
        leftMargin=margin,
        rightMargin=margin,
        topMargin=margin + 4 * mm,
        bottomMargin=margin,
        title=document.title,
        subject=document.subtitle,
        author="Building Performance Data Service",
        creator="bpservice",
    )
    frame = Frame(doc.leftMargin, doc.bottomMargin, doc.width, doc.height, id="body")
    doc.addPageTemplates([PageTemplate(id="page", frames=[frame], onPage=decorate)])

    width = doc.width
    story: list[Any] = [_p(document.title, "title"), _p(document.subtitle, "subtitle")]
    meta_rows = [[_p(k, "fact_label"), _p(v, "fact_value")] for k, v in document.meta]
    meta = PdfTable(meta_rows, colWidths=[width * 0.22, width * 0.78])
    meta.setStyle(
        TableStyle(
            [
                ("TOPPADDING", (0, 0), (-1, -1), 1),
                ("BOTTOMPADDING", (0, 0), (-1, -1), 1),
            ]
        )
    )
    story += [meta, Spacer(1, 4)]
    for section in document.sections:
        if isinstance(section, Facts):
            story += _facts(section, width)
        elif isinstance(section, Table):
            story += _table(section, width)
        else:
            story += _note(section)
    if document.sources:
        story += [_p("Sources", "h2")] + [_p(s, "small") for s in document.sources]
    doc.build(story)
    return buffer.getvalue()
