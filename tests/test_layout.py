"""The import structure docs/layout.md describes, checked from the source (nothing is imported).

Arrows point down: cli -> render / review / observe / scale -> advice -> profiles / measured -> model -> the facts
(vllm, fileio, errors). calibration sits beside the cli's callees and imports advisor, never the other way round.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("advisor", "calibration")
# Where an import may sit inside a function without saying why: the CLI (start-up stays fast: each command pays only
# for its own imports). Anywhere else an import inside a function carries its reason as a comment, on its line or on
# the line before (vLLM and torch are optional and take seconds to import; a module that only a running engine needs).
LAZY_IMPORTS_ALLOWED = ("advisor/cli/",)
# Rooms small enough to see at a glance: at most this many modules loose at advisor/'s top level, and in any folder.
MAX_LOOSE_TOP_LEVEL = 6
MAX_MODULES_PER_FOLDER = 15


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
    """The room a module sits in: its folder (advisor.model.cost), or itself at advisor's top level (advisor.errors)."""
    path = MODULES[module]
    if path.name == "__init__.py" or path.parent == ROOT / "advisor":
        return module
    return module.rsplit(".", 1)[0]


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


def test_imports_inside_functions_say_why_outside_the_cli():
    silent = []
    for module, path in MODULES.items():
        rel = str(path.relative_to(ROOT))
        if rel.startswith(LAZY_IMPORTS_ALLOWED):
            continue
        lines = path.read_text().splitlines()
        tree = ast.parse(path.read_text())
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for n in ast.walk(fn):
                    if isinstance(n, (ast.Import, ast.ImportFrom)) and \
                            "#" not in lines[n.lineno - 1] and "#" not in lines[n.lineno - 2]:
                        silent.append(f"{rel}:{n.lineno}")
    assert not silent


def test_rooms_are_small_enough_to_see_at_a_glance():
    top = sorted(p.name for p in (ROOT / "advisor").glob("*.py") if p.name != "__init__.py")
    assert len(top) <= MAX_LOOSE_TOP_LEVEL, top
    crowded = {str(d.relative_to(ROOT)): n for d in (ROOT / "advisor").rglob("*") if d.is_dir()
               and (n := len([p for p in d.glob("*.py") if p.name != "__init__.py"])) > MAX_MODULES_PER_FOLDER}
    assert not crowded
