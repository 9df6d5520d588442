"""The import engine's pure stages: read → map (template) → normalise → validate, column-wise.

No network here: the client stage fetches the meter catalog and stored readings and passes them
in as plain data; plan/journal/submit build on `ValidationResult.candidates()`. docs/import.md
describes templates, fields and every problem code."""

from __future__ import annotations

from bpsync.ingest.mapping import MappedRow, map_table, plan_table, resolve_columns, scan_date_order
from bpsync.ingest.normalise import Candidate, MeterCatalog, MeterInfo
from bpsync.ingest.pipeline import (
    Prepared,
    attach_row_values,
    check,
    check_file,
    choose_template,
    prepare,
)
from bpsync.ingest.problems import IngestError, Problem, Where
from bpsync.ingest.readers import Table, open_table
from bpsync.ingest.register import Action, Register, RegisterItem, plan_register, read_register
from bpsync.ingest.templates import (
    Match,
    Suggestion,
    Template,
    TemplateError,
    list_templates,
    load_template,
    match_template,
    save_template,
    suggest_template,
)
from bpsync.ingest.validate import (
    Collected,
    StoredReading,
    ValidationResult,
    predict_flags,
    validate,
)

__all__ = [
    "Action",
    "Candidate",
    "Collected",
    "IngestError",
    "MappedRow",
    "Match",
    "MeterCatalog",
    "MeterInfo",
    "Prepared",
    "Problem",
    "Register",
    "RegisterItem",
    "StoredReading",
    "Suggestion",
    "Table",
    "Template",
    "TemplateError",
    "ValidationResult",
    "Where",
    "attach_row_values",
    "check",
    "check_file",
    "choose_template",
    "list_templates",
    "load_template",
    "map_table",
    "match_template",
    "open_table",
    "plan_register",
    "plan_table",
    "predict_flags",
    "prepare",
    "read_register",
    "resolve_columns",
    "save_template",
    "scan_date_order",
    "suggest_template",
    "validate",
]
