"""The package map of docs/architecture.md, kept true: imports only go the documented way.

Every import inside pyevidence is read from the source (module level, TYPE_CHECKING blocks and
function bodies alike) and checked against the layers below; the module-level graph must also
be acyclic, so no import order can ever find a half-initialised module.
"""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "pyevidence"

# Each layer may import itself and the layers listed for it (docs/architecture.md).
LAYERS = {
    "core": {"core"},
    "ranking": {"core", "ranking"},
    "storage": {"core", "ranking", "storage"},
    "facade": {"core", "ranking", "storage", "facade"},
    "bench": {"core", "ranking", "storage", "facade", "bench"},
    "interfaces": {"core", "ranking", "storage", "facade", "bench", "interfaces"},
}
FOLDERS = {"core", "ranking", "storage", "interfaces", "bench"}


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(["pyevidence", *parts])] = path
    return found


MODULES = _modules()


def _layer(module: str) -> str:
    if module == "pyevidence.__main__":
        return "interfaces"  # python -m pyevidence: the command line's other door
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in FOLDERS:
        return parts[1]
    return "facade"  # the package root and its top-level modules: store, scoped, tool, loadable


def _imports(module: str, path: Path) -> list[tuple[str, bool]]:
    """(imported pyevidence module, at module level?) for every import statement in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[str, bool]] = []

    def visit(node: ast.AST, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = top and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")
                    base = base[: len(base) - (child.level - 1)]
                    target = ".".join([*base, *([child.module] if child.module else [])])
                else:
                    target = child.module or ""
                for alias in child.names:
                    name = f"{target}.{alias.name}"
                    found.append((name if name in MODULES else target, inner))
            elif isinstance(child, ast.Import):
                found.extend((alias.name, inner) for alias in child.names)
            visit(child, inner)

    visit(tree, True)
    return [(name, top) for name, top in found if name.split(".")[0] == "pyevidence" and name in MODULES]


GRAPH = {module: _imports(module, path) for module, path in MODULES.items()}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_follow_the_layers(module: str) -> None:
    layer = _layer(module)
    wrong = [target for target, _ in GRAPH[module] if _layer(target) not in LAYERS[layer]]
    assert not wrong, f"{module} ({layer}) may import only {sorted(LAYERS[layer])}, but imports {wrong}"


def test_no_import_cycle_at_module_level() -> None:
    edges = {m: {t for t, top in imports if top and t != m} for m, imports in GRAPH.items()}
    state: dict[str, int] = {}
    stack: list[str] = []

    def walk(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges[node]):
            # A package's __init__ importing its own submodules is how packages work.
            if nxt.startswith(node + "."):
                continue
            if state.get(nxt) == 1:
                cycle = [*stack[stack.index(nxt) :], nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                walk(nxt)
        stack.pop()
        state[node] = 2

    for module in sorted(edges):
        if module not in state:
            walk(module)


def test_the_map_names_every_folder() -> None:
    text = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders == FOLDERS
    for folder in folders:
        assert f"`{folder}/`" in text, f"docs/architecture.md does not describe {folder}/"


# Frozen copies of what earlier releases created: their comments speak of those releases' files.
FROZEN = {
    "pyevidence/storage/migrations/schema_v1.sql",
    "pyevidence/storage/migrations/schema_v2.sql",
    "pyevidence/storage/migrations/schema_v3.sql",
    "pyevidence/storage/migrations/schema_v4.sql",
    "pyevidence/storage/migrations/schema_v5.sql",
    "pyevidence/storage/migrations/schema_v6.sql",
    "pyevidence/storage/migrations/schema_v7.sql",
    "pyevidence/storage/migrations/schema_v8.sql",
    "pyevidence/storage/migrations/schema_v9.sql",
}
# A path of this tree with a file name extension; placeholders such as schema_vN are not paths.
NAMED_PATH = re.compile(
    r"\b((?:pyevidence|csrc|tests|docs|tools)/[A-Za-z0-9_./-]*\.(?:py|c|h|sql|md|js|toml|json|png))\b"
)


def test_every_file_path_named_in_the_sources_exists() -> None:
    """Comments, docs and messages that name a file of this tree name one that exists: a file
    moved without its mentions leaves readers looking for what is not there."""
    root = PACKAGE.parent
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True
    ).stdout.split()
    missing = []
    for name in tracked:
        if name in FROZEN or not name.endswith(
            (".py", ".c", ".h", ".sql", ".md", ".toml", ".js", "Makefile")
        ):
            continue
        text = (root / name).read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            for match in NAMED_PATH.finditer(line):
                path = match.group(1)
                if re.search(r"_vN\b|/runbooks/", path):
                    continue
                if not (root / path).exists():
                    missing.append(f"{name}:{number}: {path}")
    assert not missing, "paths that do not exist:\n" + "\n".join(missing)
