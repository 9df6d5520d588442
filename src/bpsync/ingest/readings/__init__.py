"""Cells into readings: a chunk of a table mapped under its template into readings as the file
states them (row fields, row problems, layouts), then each reading matched to its meter and
converted into the meter's unit."""
