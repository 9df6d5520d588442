"""The portfolio register: properties, buildings and meters read from a workbook, planned
against what the service holds, and applied idempotently."""
