"""Understanding a table: which template reads it, where each field's column is, and the
whole-file decisions taken from evidence in the cells (decimal separator, date order, period
convention) before any row is mapped."""
