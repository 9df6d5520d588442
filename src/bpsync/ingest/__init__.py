"""The import engine's pure stages: read → map (template) → normalise → validate.

No network here: the client stage fetches the meter catalog and stored readings and passes them
in as plain data; plan/journal/submit build on `ValidationResult.candidates()`. docs/import.md
describes templates, fields and every problem code."""

from __future__ import annotations

from bpsync.ingest.mapping import MappedRow, map_rows, map_table, resolve_columns, scan_date_order
from bpsync.ingest.normalise import Candidate, MeterCatalog, MeterInfo, normalise
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
    collect,
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
    "collect",
    "list_templates",
    "load_template",
    "map_rows",
    "map_table",
    "match_template",
    "normalise",
    "open_table",
    "plan_register",
    "predict_flags",
    "prepare",
    "read_register",
    "resolve_columns",
    "save_template",
    "scan_date_order",
    "suggest_template",
    "validate",
]
