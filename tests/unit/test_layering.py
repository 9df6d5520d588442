"""Layers and sizes of the terminal app and the service's reports (issue 26): the app's screens
never import the app (they reach it through `bpsync.tui.context.AppContext`), not even lazily or
for type checking, and no module or class there grows past what a newcomer can read."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
APP = "bpsync.tui.app"
LAUNCHER = "bpsync.tui.command"  # starts the app: the one module that may import it
LONGEST_MODULE = 700
LONGEST_CLASS = 250
SIZED = ("bpservice/reporting", "bpsync/tui")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imported(name: str, path: Path, tree: ast.Module) -> Iterator[str]:
    """Every module an import statement anywhere in the file names: at the top, in functions and
    under `if TYPE_CHECKING:` alike; `from a import b` names both `a` and `a.b`."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parent = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*parent, base] if base else parent)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and (getattr(node.func, "attr", None) or getattr(node.func, "id", None))
            in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            yield str(node.args[0].value)


def test_only_the_launcher_imports_the_app() -> None:
    importers = []
    for path in sorted((SRC / "bpsync" / "tui").rglob("*.py")):
        name = module_name(path)
        if name in (APP, LAUNCHER):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(m == APP or m.startswith(f"{APP}.") for m in imported(name, path, tree)):
            importers.append(name)
    assert importers == []


def test_the_app_provides_what_the_screens_need() -> None:
    from bpsync.tui.app import BPSyncApp
    from bpsync.tui.context import AppContext

    assert isinstance(BPSyncApp(auto_connect=False), AppContext)


def sized_files() -> list[Path]:
    return [path for folder in SIZED for path in sorted((SRC / folder).rglob("*.py"))]


def test_no_long_modules() -> None:
    long = {
        str(path.relative_to(SRC)): n
        for path in sized_files()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > LONGEST_MODULE
    }
    assert long == {}


def test_no_long_classes() -> None:
    long = {}
    for path in sized_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > LONGEST_CLASS:
                    long[f"{path.relative_to(SRC)}:{node.lineno} {node.name}"] = lines
    assert long == {}
