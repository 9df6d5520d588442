"""Report generation: what can be generated (catalogue), the content of each report type as pure
functions over plain dicts (content), renderers per format (pdf, tabular), gathering the inputs
from the database and the benchmark engine (gather), and signed download URLs (signing)."""
