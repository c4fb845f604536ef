"""The shape of tawac/: every import goes to a module of the same or a lower layer, there
is no import loop, no function is over 150 lines and no module outside the dialects
over 1,000 (docs/design.md, "Layers").

Imports are read from the source (ast), every one counted: at module level, inside
functions (lazy imports), under `TYPE_CHECKING`, relative or absolute.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "tawac"

#: Low to high; a module belongs to the layer of the longest prefix that names it.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("support", ("tawac", "tawac.support", "tawac.target")),
    ("ir", ("tawac.dialects", "tawac.ir")),
    ("analysis", ("tawac.analysis",)),
    ("schedule", ("tawac.schedule",)),
    ("passes", ("tawac.passes",)),
    ("backend", ("tawac.backend_ptx",)),
    ("compiler", ("tawac.compiler",)),
    ("driver", ("tawac.driver",)),
    ("runtime", ("tawac.runtime",)),
    ("tools", ("tawac.tools", "tawac.check", "tawac.fuzz")),
    ("integrations", ("tawac.torch", "tawac.triton")),
]

MAX_FUNCTION_LINES = 150
#: The most lines of a module outside tawac/dialects/ (whose op definitions are long
#: tables of declarations): a longer one is several parts to split.
MAX_MODULE_LINES = 1000


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def layer(module: str) -> int:
    """The index in LAYERS of the module's layer."""
    best: tuple[int, int] | None = None
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            match = module == p or (p != "tawac" and module.startswith(p + "."))
            if match and (best is None or len(p) > best[1]):
                best = (i, len(p))
    assert best is not None, f"{module} is in no layer: add it to LAYERS"
    return best[0]


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The tawac modules an import statement of `module` loads."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == "tawac"]
    base = node.module or ""
    if node.level:
        package = module.split(".")
        if MODULES[module].name != "__init__.py":
            package = package[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join([*package, *([node.module] if node.module else [])])
    if base.split(".")[0] != "tawac":
        return []
    out = []
    for a in node.names:
        full = f"{base}.{a.name}"
        out.append(full if full in MODULES else base)
    return out


def import_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(), str(path))
        edges: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                edges.update(t for t in _targets(module, node) if t != module)
        graph[module] = edges
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] != index[v]:
            return
        comp = []
        while True:
            w = stack.pop()
            on.discard(w)
            comp.append(w)
            if w == v:
                break
        if len(comp) > 1:
            out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_every_module_has_a_layer():
    for module in MODULES:
        layer(module)


def test_no_import_loop():
    assert _cycles(import_graph()) == []


def test_imports_go_down_the_layers():
    upward = [
        f"{m} ({LAYERS[layer(m)][0]}) imports {t} ({LAYERS[layer(t)][0]})"
        for m, targets in sorted(import_graph().items())
        for t in sorted(targets)
        if layer(t) > layer(m)
    ]
    assert upward == []


@pytest.mark.parametrize(
    ("graph", "found"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
        ({"a": {"b"}, "b": set()}, []),
    ],
)
def test_the_loop_finder_finds_loops(graph, found):
    assert _cycles(graph) == found


def test_the_layer_check_sees_lazy_and_relative_imports():
    """An import inside a function and a relative import both count."""
    src = "def f():\n    from tawac.tools.cli import main\nfrom . import hopper\n"
    tree = ast.parse(src)
    found = [
        t
        for n in ast.walk(tree)
        if isinstance(n, ast.Import | ast.ImportFrom)
        for t in _targets("tawac.target.layouts", n)
    ]
    assert sorted(found) == ["tawac.target.hopper", "tawac.tools.cli"]
    assert layer("tawac.tools.cli") > layer("tawac.target.layouts")


def test_no_function_over_150_lines():
    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            lines = node.end_lineno - node.lineno + 1
            if lines > MAX_FUNCTION_LINES:
                long.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name} {lines}")
    assert long == []


def test_no_module_over_1000_lines_outside_the_dialects():
    long = [
        f"{path.relative_to(PACKAGE.parent)} {n}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if "dialects" not in path.relative_to(PACKAGE).parts
        and (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    ]
    assert long == []
