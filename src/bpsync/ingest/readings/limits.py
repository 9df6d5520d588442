"""How much of a bad file is read before it is refused as a whole (the mapper's and the
normaliser's probes, the refused-row limit) and how many meter names are looked up one by one."""

# A file whose first PROBE_ROWS data rows give not one reading (the mapper), or whose first
# PROBE_ROWS readings name not one meter the profile knows (the normaliser), is refused as a
# whole: 1M rows of garbage took 110 s and 1.7 GB keeping every row as a problem (issue 33
# item 7). A real export refusing that many rows in a row has a wrong template, column or meter
# map, which one line says better than 10,000 row problems.
PROBE_ROWS = 10_000
# At most this many rows refused in one file: each refused row keeps its cells and reason for the
# reject report (about 1 KB), so a file with a readable first row and a million of garbage after it
# took 43 s and 1.2 GB. Past the limit the file is refused as a whole, before anything is sent,
# with the first reason (decisions T5).
MAX_REFUSED_ROWS = 100_000
# Rows are read CHUNK_ROWS at a time but mapped in pieces of MAP_ROWS, so the count of refused rows
# is checked every MAP_ROWS rows: a chunk of 200,000 refused rows kept 200,000 problems with their
# cells before the first check (0.6 GB for a 55 MB file); pieces stop it near the limit.
MAP_ROWS = 25_000
# More distinct meters than a file of bills names (the largest benchmark names 10,000): past
# this many, the importer lists the organisation's meters instead of looking up each name the
# file holds, so a file of a million distinct garbage names is not kept as a set of them.
MAX_NAMED_METERS = 50_000
