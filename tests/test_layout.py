"""The import structure docs/layout.md describes, checked from the source (nothing is imported).

Arrows point down: cli -> advise / render / review -> profiles / measured -> model -> the facts (errors, vllm).
calibration sits beside the cli's callees and imports advisor, never the other way round.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("advisor", "calibration")
# Where an import may sit inside a function: the CLI (start-up stays fast: each command pays only for its own
# imports), the engine layer's vLLM import and the test pairs' torch (optional: `pip install .` has neither, and
# they take seconds; `validate --from-json` re-analyses without them).
# vLLM is optional and slow to import (vllm_engine, platform); the FlashInfer fusion module imports only on CUDA
# builds of vLLM (allreduce_worker, which runs in vLLM's workers on either)
LAZY_IMPORTS_ALLOWED = ("advisor/cli/", "calibration/engine/vllm_engine.py", "calibration/engine/testpair.py",
                        "calibration/engine/platform.py", "calibration/engine/allreduce_worker.py")


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _in_type_checking(node: ast.If) -> bool:
    return isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def _imports(path: Path, top_level: bool) -> set[str]:
    """Project modules imported at module level (top_level) or inside functions (not top_level)."""
    tree = ast.parse(path.read_text())
    found: set[str] = set()

    def visit(node, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _in_type_checking(child):
                continue  # annotations only: no runtime arrow
            inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, (ast.Import, ast.ImportFrom)) and inside != top_level:
                names = [a.name for a in child.names] if isinstance(child, ast.Import) else \
                    [child.module or ""] + [f"{child.module}.{a.name}" for a in child.names]
                found.update(n for n in names if n in MODULES)
            visit(child, inside)

    visit(tree, False)
    return found


def _unit(module: str) -> str:
    """A subpackage (advisor.model) or a top-level module (advisor.advise): the rooms of the house."""
    parts = module.split(".")
    return ".".join(parts[:2])


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def dfs(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := dfs(nxt)):
                return found
        state[node] = 2
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state and (found := dfs(node)):
            return found
    return None


def _graph(level) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        for imported in _imports(path, top_level=True):
            a, b = level(module), level(imported)
            if a != b and not b.startswith(a + "."):  # a package's __init__ re-exporting its own parts is no arrow
                graph.setdefault(a, set()).add(b)
    return graph


def test_no_import_cycle_between_files():
    assert _cycle(_graph(lambda m: m)) is None


def test_no_import_cycle_between_packages():
    assert _cycle(_graph(_unit)) is None


def test_advisor_never_imports_calibration_and_calibration_never_imports_the_cli():
    wrong = []
    for module, path in MODULES.items():
        for imported in _imports(path, True) | _imports(path, False):
            if module.startswith("advisor.") and not module.startswith("advisor.cli") \
                    and imported.startswith("calibration"):
                wrong.append(f"{module} -> {imported}")
            if module.startswith("calibration") and imported.startswith("advisor.cli"):
                wrong.append(f"{module} -> {imported}")
    assert not wrong


def test_imports_inside_functions_only_where_start_up_needs_them():
    tree_imports = []
    for module, path in MODULES.items():
        rel = str(path.relative_to(ROOT))
        if rel.startswith(LAZY_IMPORTS_ALLOWED):
            continue
        tree = ast.parse(path.read_text())
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                tree_imports += [f"{rel}:{n.lineno}" for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert not tree_imports
