"""Reusable widgets; each carries its own DEFAULT_CSS."""
