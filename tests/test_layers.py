"""The package's layers (README, Layout): every import, lazy ones inside functions included, runs from a
layer to the same one or one below it, so the import graph has no upward edge and no cycle."""

import ast
from pathlib import Path

import hpc

#: Bottom to top; a module's layer is its first component under hpc/ (a package or a module).
LAYERS = [
    {"__init__", "errors", "atomic", "jsontext", "checks", "progress", "resources", "container", "store", "fetch"},
    {"executors"}, {"graphs"}, {"data"}, {"learners"}, {"select"}, {"pef"}, {"train"}, {"run", "results", "bootstrap", "api"},
    {"report"}, {"launch"}, {"cli"},
]
ROOT = Path(hpc.__file__).parent


def layer(component: str) -> int:
    return next(i for i, names in enumerate(LAYERS) if component in names)


def imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("hpc."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("hpc.")}
    return found


def test_every_module_has_a_layer():
    components = {p.relative_to(ROOT).parts[0].removesuffix(".py") for p in ROOT.rglob("*.py")}
    assert all(any(c in names for names in LAYERS) for c in components), components


def test_no_import_runs_upward():
    upward = [f"{p.relative_to(ROOT)} imports hpc.{m}" for p in sorted(ROOT.rglob("*.py"))
              for m in imports(p) if layer(m) > layer(p.relative_to(ROOT).parts[0].removesuffix(".py"))]
    assert upward == []


def test_no_function_in_hpc_runs_over_sixty_lines():
    """Long functions hide steps that deserve names (the house's rule; data tables are module-level constants)."""
    long, seen = [], 0
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                seen += 1
                if node.end_lineno - node.lineno >= 60:
                    long.append(f"{path.relative_to(ROOT.parent)}:{node.lineno} {node.name}")
    assert seen > 500 and not long, long
