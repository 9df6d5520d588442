"""The shape of the code a newcomer changes first (issue 15): no import cycles anywhere in
`src/`, and no function longer than ~120 lines in the command line, the client's request path,
the watcher and the demo."""

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


def modules() -> dict[str, Path]:
    found = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


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


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Every module of ours that importing `name` runs (with the packages above it)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    edges: set[str] = set()
    for node in run_at_import(tree):
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


def test_no_import_cycles_in_src() -> None:
    known = modules()
    graph = {name: imports_of(name, path, known) for name, path in known.items()}
    assert cycles(graph) == []


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
