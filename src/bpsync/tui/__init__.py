"""The terminal app (Textual): `run_tui` in `command.py` starts it; see docs/tui.md."""
