"""Cells: what one cell can hold (values, dates, units) and the columnar machinery that reads a
column of them at once. The parsers every later stage shares; this room imports no other room
of ingest but `problems`."""
