"""The shape of the code a newcomer changes first (issues 15 and 26): no import cycles anywhere in
`src/`, not even through imports inside functions; no room of the import engine
(`bpsync/ingest/<room>/`) that a file's imports lead out of and back into; the command line, the
watcher and the terminal app enter the engine only by its door (`bpsync.ingest`); no module over
700 lines or class over 250 lines where the engine's shape matters; and no function longer than
~120 lines in the command line, the client's request path, the watcher and the demo.

Lazy imports: an import inside a function is an edge like any other (issue 26: following a file's
path through its imports never returns to a module or room it left, and a reader follows a lazy
import as much as an eager one; the command line loads its heavy libraries lazily, which makes no
circle). `if TYPE_CHECKING:` blocks are never edges (only a type checker runs them)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
LONGEST = 120
CHECKED = (
    "bpsync/cli",
    "bpsync/commands",
    "bpsync/client/base.py",
    "bpsync/watch",
    "bpsync/session.py",
)
ENGINE = "bpsync.ingest"
# Where a module over MAX_MODULE_LINES or a class over MAX_CLASS_LINES is refused (issue 26).
SIZED = ("bpsync/ingest", "bpsync/tui", "bpservice/reporting")
MAX_MODULE_LINES = 700
MAX_CLASS_LINES = 250


def modules() -> dict[str, Path]:
    found = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def not_type_checking(tree: ast.Module) -> Iterator[ast.AST]:
    """Every statement of the module, function bodies included, but `if TYPE_CHECKING:`."""
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo.extend(node.orelse)
            continue
        yield node
        todo.extend(ast.iter_child_nodes(node))


def run_at_import(tree: ast.Module) -> Iterator[ast.AST]:
    """The statements Python runs when the module is imported: not function bodies (a lazy
    import there is deliberate), not `if TYPE_CHECKING:` blocks (only a type checker runs them)."""
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo.extend(node.orelse)
            continue
        yield node
        todo.extend(ast.iter_child_nodes(node))


def with_parents(module: str, known: dict[str, Path]) -> set[str]:
    """Importing `a.b.c` runs `a.b` (and `a`) first: those are imports too."""
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts) + 1)} & set(known)


def imports_of(name: str, path: Path, known: dict[str, Path], *, lazy: bool = False) -> set[str]:
    """Every module of ours that importing `name` runs (with the packages above it); with `lazy`,
    also those its functions import when called."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    edges: set[str] = set()
    for node in (not_type_checking if lazy else run_at_import)(tree):
        if isinstance(node, ast.Import):
            edges.update(a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*parent, base] if base else parent)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                if full in known:
                    edges.add(full)
                elif base in known:
                    edges.add(base)
    edges = {parent for edge in edges for parent in with_parents(edge, known)}
    # a module's own packages are run before it, never by it
    edges -= with_parents(name, known)
    return edges


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def in_engine(name: str) -> bool:
    return name == ENGINE or name.startswith(ENGINE + ".")


def import_graph() -> dict[str, set[str]]:
    """Module → the modules of ours it imports, at import time and in function bodies (see the
    module's docstring)."""
    known = modules()
    return {name: imports_of(name, path, known, lazy=True) for name, path in known.items()}


def room(name: str) -> str:
    """The engine's room a module lives in: the folder (or module) right below `bpsync.ingest`."""
    return name.removeprefix(ENGINE + ".").split(".")[0]


def test_no_import_cycles_in_src() -> None:
    assert cycles(import_graph()) == []


def test_no_room_of_the_engine_is_returned_to() -> None:
    """The engine's rooms form a one-way chain (cells, readers, understand, readings, checks,
    lookup, send, register, run): no module's imports lead out of its room and, through other
    rooms, back in. The door (`bpsync.ingest` itself) is above them all."""
    graph = import_graph()
    rooms: dict[str, set[str]] = {}
    for name, edges in graph.items():
        if not name.startswith(ENGINE + "."):
            continue
        for edge in edges:
            if edge.startswith(ENGINE + ".") and room(edge) != room(name):
                rooms.setdefault(room(name), set()).add(room(edge))
    assert rooms, "the engine's rooms were not found"
    assert cycles(rooms) == []


def test_the_engine_is_entered_by_its_door() -> None:
    """The command line, the watcher and the terminal app take what they need from
    `bpsync.ingest` (lazy imports included), never from a room behind it."""
    known = modules()
    through_a_room = {
        name: sorted(
            e for e in imports_of(name, path, known, lazy=True) if in_engine(e) and e != ENGINE
        )
        for name, path in known.items()
        if name.startswith("bpsync.") and not in_engine(name)
    }
    assert {name: edges for name, edges in through_a_room.items() if edges} == {}


def sized_files() -> list[Path]:
    return [path for root in SIZED for path in sorted((SRC / root).rglob("*.py"))]


def test_no_module_too_long_where_the_shape_matters() -> None:
    lines = {
        str(path.relative_to(SRC)): len(path.read_text(encoding="utf-8").splitlines())
        for path in sized_files()
    }
    assert {name: n for name, n in lines.items() if n > MAX_MODULE_LINES} == {}


def classes(path: Path) -> Iterator[tuple[str, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            yield (
                f"{path.relative_to(SRC)}:{node.lineno} {node.name}",
                ((node.end_lineno or node.lineno) - node.lineno + 1),
            )


def test_no_class_too_long_where_the_shape_matters() -> None:
    long = {name: n for path in sized_files() for name, n in classes(path) if n > MAX_CLASS_LINES}
    assert long == {}


def functions(path: Path) -> Iterator[tuple[str, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield (
                f"{path.relative_to(SRC)}:{node.lineno} {node.name}",
                ((node.end_lineno or node.lineno) - node.lineno + 1),
            )


def test_no_long_functions_where_newcomers_start() -> None:
    paths: list[Path] = []
    for item in CHECKED:
        target = SRC / item
        paths += sorted(target.rglob("*.py")) if target.is_dir() else [target]
    long = {name: n for path in paths for name, n in functions(path) if n > LONGEST}
    assert long == {}
