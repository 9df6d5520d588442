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

Every name loads on first use (`_WHERE`), from its own room only.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bpsync.ingest.cells.units import conversion_factor
    from bpsync.ingest.cells.values import cell_text, header_key
    from bpsync.ingest.checks.collected import Collected, StoredReading, ValidationResult
    from bpsync.ingest.checks.service_rules import predict_flags
    from bpsync.ingest.checks.validate import validate
    from bpsync.ingest.lookup.fetch import fetch_existing, fetch_portfolio
    from bpsync.ingest.lookup.meter_map import (
        link_meter,
        load_meter_map,
        meter_map_path,
        unlink_meter,
    )
    from bpsync.ingest.problems import IngestError, Problem, Where
    from bpsync.ingest.readers import Table, detect_format, open_table
    from bpsync.ingest.readers.sheet_precheck import precheck_sheets
    from bpsync.ingest.readings.assign_meters import Candidate, MeterCatalog, MeterInfo
    from bpsync.ingest.readings.mapped_rows import MappedRow, map_table
    from bpsync.ingest.register.apply import RegisterOutcome, import_register
    from bpsync.ingest.register.plan_changes import Action, plan_register
    from bpsync.ingest.register.read import Register, RegisterItem, read_register
    from bpsync.ingest.run.import_file import ImportOptions, import_file, target_of
    from bpsync.ingest.run.prepare import (
        Prepared,
        attach_row_values,
        check,
        check_file,
        choose_template,
        prepare,
        template_to_keep,
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
    from bpsync.ingest.understand.infer import infer_template, suggest_for_table
    from bpsync.ingest.understand.templates import (
        FIELDS,
        Match,
        Suggestion,
        Template,
        TemplateError,
        builtin_templates_dir,
        find_column,
        list_templates,
        load_template,
        match_template,
        save_template,
        suggest_template,
        template_to_dict,
    )

# Every name loads on first use (PEP 562), with only the rooms it needs: the command line and the
# watcher name these at start-up, and `bpsync --help` must not load pandas and pyarrow for it
# (issue 28 item 7); the service half brings the HTTP client, which a script or child process
# that only prepares and checks a file does not need (tests/ingest/test_bounded_input.py).
_WHERE = {
    "conversion_factor": "bpsync.ingest.cells.units",
    "cell_text": "bpsync.ingest.cells.values",
    "header_key": "bpsync.ingest.cells.values",
    "Collected": "bpsync.ingest.checks.collected",
    "StoredReading": "bpsync.ingest.checks.collected",
    "ValidationResult": "bpsync.ingest.checks.collected",
    "predict_flags": "bpsync.ingest.checks.service_rules",
    "validate": "bpsync.ingest.checks.validate",
    "fetch_existing": "bpsync.ingest.lookup.fetch",
    "fetch_portfolio": "bpsync.ingest.lookup.fetch",
    "link_meter": "bpsync.ingest.lookup.meter_map",
    "load_meter_map": "bpsync.ingest.lookup.meter_map",
    "meter_map_path": "bpsync.ingest.lookup.meter_map",
    "unlink_meter": "bpsync.ingest.lookup.meter_map",
    "IngestError": "bpsync.ingest.problems",
    "Problem": "bpsync.ingest.problems",
    "Where": "bpsync.ingest.problems",
    "Table": "bpsync.ingest.readers",
    "detect_format": "bpsync.ingest.readers",
    "open_table": "bpsync.ingest.readers",
    "precheck_sheets": "bpsync.ingest.readers.sheet_precheck",
    "Candidate": "bpsync.ingest.readings.assign_meters",
    "MeterCatalog": "bpsync.ingest.readings.assign_meters",
    "MeterInfo": "bpsync.ingest.readings.assign_meters",
    "MappedRow": "bpsync.ingest.readings.mapped_rows",
    "map_table": "bpsync.ingest.readings.mapped_rows",
    "RegisterOutcome": "bpsync.ingest.register.apply",
    "import_register": "bpsync.ingest.register.apply",
    "Action": "bpsync.ingest.register.plan_changes",
    "plan_register": "bpsync.ingest.register.plan_changes",
    "Register": "bpsync.ingest.register.read",
    "RegisterItem": "bpsync.ingest.register.read",
    "read_register": "bpsync.ingest.register.read",
    "ImportOptions": "bpsync.ingest.run.import_file",
    "import_file": "bpsync.ingest.run.import_file",
    "target_of": "bpsync.ingest.run.import_file",
    "Prepared": "bpsync.ingest.run.prepare",
    "attach_row_values": "bpsync.ingest.run.prepare",
    "check": "bpsync.ingest.run.prepare",
    "check_file": "bpsync.ingest.run.prepare",
    "choose_template": "bpsync.ingest.run.prepare",
    "template_to_keep": "bpsync.ingest.run.prepare",
    "prepare": "bpsync.ingest.run.prepare",
    "storable_name": "bpsync.ingest.send.import_records",
    "stored_name": "bpsync.ingest.send.import_records",
    "Interrupts": "bpsync.ingest.send.interrupt",
    "Journal": "bpsync.ingest.send.journal",
    "DEFAULT_HEADROOM": "bpsync.ingest.send.plan_calls",
    "NoProgress": "bpsync.ingest.send.progress",
    "RichProgress": "bpsync.ingest.send.progress",
    "ImportSummary": "bpsync.ingest.send.results",
    "group_problems": "bpsync.ingest.send.results",
    "problems_table": "bpsync.ingest.send.results",
    "reject_report_path": "bpsync.ingest.send.results",
    "render": "bpsync.ingest.send.results",
    "resolve_columns": "bpsync.ingest.understand.columns",
    "plan_table": "bpsync.ingest.understand.evidence",
    "scan_date_order": "bpsync.ingest.understand.evidence",
    "scan_decimal": "bpsync.ingest.understand.evidence",
    "FIELDS": "bpsync.ingest.understand.templates",
    "Match": "bpsync.ingest.understand.templates",
    "Suggestion": "bpsync.ingest.understand.templates",
    "Template": "bpsync.ingest.understand.templates",
    "TemplateError": "bpsync.ingest.understand.templates",
    "builtin_templates_dir": "bpsync.ingest.understand.templates",
    "list_templates": "bpsync.ingest.understand.templates",
    "load_template": "bpsync.ingest.understand.templates",
    "match_template": "bpsync.ingest.understand.templates",
    "save_template": "bpsync.ingest.understand.templates",
    "suggest_template": "bpsync.ingest.understand.templates",
    "find_column": "bpsync.ingest.understand.templates",
    "infer_template": "bpsync.ingest.understand.infer",
    "suggest_for_table": "bpsync.ingest.understand.infer",
    "template_to_dict": "bpsync.ingest.understand.templates",
}


def __getattr__(name: str) -> Any:
    """A name of the door, imported from its room on first use and kept."""
    module = _WHERE.get(name)
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
    "find_column",
    "group_problems",
    "header_key",
    "import_file",
    "import_register",
    "infer_template",
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
    "precheck_sheets",
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
    "suggest_for_table",
    "suggest_template",
    "target_of",
    "template_to_dict",
    "template_to_keep",
    "unlink_meter",
    "validate",
]
