"""Portfolio Manager out: PM's "Add Bills to Existing Meters" and "Create Meters" upload
workbooks written from the service's stored readings and meters (issue 31).

`layout` holds PM's sheets, headers, lists and vocabularies; `rows` builds the rows from plain
data (pure); `workbook` writes them with openpyxl; `ledger` remembers what was exported; `export`
gathers the data through the client and ties these together. docs/pm-round-trip.md describes the
commands. Nothing heavy is imported here."""
