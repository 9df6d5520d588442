"""The import engine, and its one door: the command line, the watcher and the terminal app take
what they need from here, never from the rooms below (tests/unit/test_structure.py holds them to
it). Tests and benchmarks may reach into a room.

The rooms, in the order data flows (docs/import.md has the table):
- `readers/` files into tables (CSV, workbooks, Green Button);
- `understand/` what a table means: templates, each field's column, the whole-file evidence
  (decimal separator, date order, period convention);
- `readings/` cells into readings: a chunk mapped under its template, each reading matched to
  its meter and converted into the meter's unit; `cells/` holds the parsers of one cell (values,
  dates, units) and the columnar machinery every stage shares;
- `checks/` the file-level checks before anything is sent;
- `lookup/` what the service already holds (meters, stored readings, the meter map);
- `send/` the plan of calls, the journal, the submitter and the results;
- `register/` the portfolio register, beside them;
- `run/` one import end to end: `prepare` + `check` (no network), `import_file` (with the service).

No network below `lookup/`: the client stage fetches the meter catalog and stored readings and
passes them in as plain data. docs/import.md describes templates, fields and every problem code.

The names of the service half (`_WITH_THE_SERVICE`) load on first use: they bring the HTTP client
with them, and a script or child process that only prepares and checks a file keeps the start-up
time and memory it had (tests/ingest/test_bounded_input.py measures a child's peak memory).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from bpsync.ingest.cells.units import conversion_factor
from bpsync.ingest.cells.values import cell_text, header_key
from bpsync.ingest.checks.collected import Collected, StoredReading, ValidationResult
from bpsync.ingest.checks.service_rules import predict_flags
from bpsync.ingest.checks.validate import validate
from bpsync.ingest.lookup.meter_map import link_meter, load_meter_map, meter_map_path, unlink_meter
from bpsync.ingest.problems import IngestError, Problem, Where
from bpsync.ingest.readers import Table, detect_format, open_table
from bpsync.ingest.readings.assign_meters import Candidate, MeterCatalog, MeterInfo
from bpsync.ingest.readings.mapped_rows import MappedRow, map_table
from bpsync.ingest.register.plan_changes import Action, plan_register
from bpsync.ingest.register.read import Register, RegisterItem, read_register
from bpsync.ingest.run.prepare import (
    Prepared,
    attach_row_values,
    check,
    check_file,
    choose_template,
    prepare,
)
from bpsync.ingest.send.import_records import storable_name, stored_name
from bpsync.ingest.send.interrupt import Interrupts
from bpsync.ingest.send.journal import Journal
from bpsync.ingest.send.plan_calls import DEFAULT_HEADROOM
from bpsync.ingest.send.progress import NoProgress, RichProgress
from bpsync.ingest.send.results import (
    ImportSummary,
    group_problems,
    problems_table,
    reject_report_path,
    render,
)
from bpsync.ingest.understand.columns import resolve_columns
from bpsync.ingest.understand.evidence import plan_table, scan_date_order, scan_decimal
from bpsync.ingest.understand.templates import (
    FIELDS,
    Match,
    Suggestion,
    Template,
    TemplateError,
    builtin_templates_dir,
    list_templates,
    load_template,
    match_template,
    save_template,
    suggest_template,
    template_to_dict,
)

if TYPE_CHECKING:
    from bpsync.ingest.lookup.fetch import fetch_existing, fetch_portfolio
    from bpsync.ingest.register.apply import RegisterOutcome, import_register
    from bpsync.ingest.run.import_file import ImportOptions, import_file, target_of

_WITH_THE_SERVICE = {
    "fetch_existing": "bpsync.ingest.lookup.fetch",
    "fetch_portfolio": "bpsync.ingest.lookup.fetch",
    "RegisterOutcome": "bpsync.ingest.register.apply",
    "import_register": "bpsync.ingest.register.apply",
    "ImportOptions": "bpsync.ingest.run.import_file",
    "import_file": "bpsync.ingest.run.import_file",
    "target_of": "bpsync.ingest.run.import_file",
}


def __getattr__(name: str) -> Any:
    """A name of the service half, imported on first use (PEP 562) and kept."""
    module = _WITH_THE_SERVICE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = globals()[name] = getattr(importlib.import_module(module), name)
    return value


__all__ = [
    "DEFAULT_HEADROOM",
    "FIELDS",
    "Action",
    "Candidate",
    "Collected",
    "ImportOptions",
    "ImportSummary",
    "IngestError",
    "Interrupts",
    "Journal",
    "MappedRow",
    "Match",
    "MeterCatalog",
    "MeterInfo",
    "NoProgress",
    "Prepared",
    "Problem",
    "Register",
    "RegisterItem",
    "RegisterOutcome",
    "RichProgress",
    "StoredReading",
    "Suggestion",
    "Table",
    "Template",
    "TemplateError",
    "ValidationResult",
    "Where",
    "attach_row_values",
    "builtin_templates_dir",
    "cell_text",
    "check",
    "check_file",
    "choose_template",
    "conversion_factor",
    "detect_format",
    "fetch_existing",
    "fetch_portfolio",
    "group_problems",
    "header_key",
    "import_file",
    "import_register",
    "link_meter",
    "list_templates",
    "load_meter_map",
    "load_template",
    "map_table",
    "match_template",
    "meter_map_path",
    "open_table",
    "plan_register",
    "plan_table",
    "predict_flags",
    "prepare",
    "problems_table",
    "read_register",
    "reject_report_path",
    "render",
    "resolve_columns",
    "save_template",
    "scan_date_order",
    "scan_decimal",
    "storable_name",
    "stored_name",
    "suggest_template",
    "target_of",
    "template_to_dict",
    "unlink_meter",
    "validate",
]
