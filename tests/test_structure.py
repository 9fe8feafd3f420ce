"""The house stays standing: ``shared/`` is grouped by role and every import points down.

Roles from the top: front ends -> analysis -> runs -> metric kit -> judge engine -> base
(docs/ARCHITECTURE.md draws them). Read from the code's own imports (``ast``), function-level
and ``TYPE_CHECKING`` imports included, so a lazy import cannot hide a cycle or an upward arrow.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1] / "shared"

# role -> module prefixes, from the bottom up; the package's lazy facade (shared/__init__.py)
# belongs to no role
ROLES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", ("shared.base",)),
    ("engine", ("shared.engine", "shared.llama_server")),
    ("metric kit", ("shared.kit",)),
    ("runs", ("shared.runs",)),
    ("analysis", ("shared.analysis",)),
    ("front ends", ("shared.cli", "shared.demo", "shared.spaces", "shared.__main__")),
)
MAX_TOP_LEVEL_MODULES = 8
MAX_FILE_LINES = 400
MAX_LONG_FUNCTIONS = 2
LONG_FUNCTION_LINES = 80


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SHARED.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(SHARED.rglob("*.py"))}


MODULES = modules()


def resolve(importer: str, node: ast.ImportFrom) -> list[tuple[str, list[str]]]:
    """The modules of ``shared`` that one ``from ... import ...`` reads, each with the names
    taken from it (a name that is itself a submodule is an import of that submodule)."""
    is_package = MODULES[importer].name == "__init__.py"
    if node.level:
        base = importer.split(".")
        base = base[: len(base) - node.level + (1 if is_package else 0)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    if not (target == "shared" or target.startswith("shared.")):
        return []
    found: list[tuple[str, list[str]]] = []
    plain: list[str] = []
    for alias in node.names:
        if f"{target}.{alias.name}" in MODULES:
            found.append((f"{target}.{alias.name}", []))
        else:
            plain.append(alias.name)
    if plain:
        found.append((target, plain))
    return found


def imports() -> list[tuple[str, str, list[str], int]]:
    """(importer, imported module, names taken, line) for every import between modules."""
    edges = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                for target, names in resolve(name, node):
                    edges.append((name, target, names, node.lineno))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("shared."):
                        edges.append((name, alias.name, [], node.lineno))
    return [e for e in edges if e[1] in MODULES and e[1] != e[0]]


def role_of(module: str) -> int | None:
    for rank, (_, prefixes) in enumerate(ROLES):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return rank
    return None


def cycles(edges: list[tuple[str, str, list[str], int]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for importer, target, _, _ in edges:
        graph[importer].add(target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_every_module_has_a_role():
    homeless = [m for m in MODULES if m != "shared" and role_of(m) is None]
    assert not homeless, f"modules in no role (add them to ROLES or move them): {homeless}"


def test_no_import_cycles():
    assert cycles(imports()) == []


def test_imports_point_down_between_roles():
    upward = [
        f"{importer}:{line} imports {target} ({ROLES[role_of(importer)][0]} -> "
        f"{ROLES[role_of(target)][0]})"
        for importer, target, _, line in imports()
        if importer != "shared" and role_of(target) > role_of(importer)
    ]
    assert not upward, "\n".join(upward)


def test_no_private_name_is_imported_from_another_module():
    private = [f"{importer}:{line} takes {names} from {target}"
               for importer, target, all_names, line in imports()
               for names in [[n for n in all_names if n.startswith("_") and not n.startswith("__")]]
               if names]
    assert not private, "\n".join(private)


def test_few_modules_directly_in_shared():
    top = sorted(p.name for p in SHARED.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top


FILES = sorted(SHARED.rglob("*.py"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(SHARED)))
def test_no_file_is_too_long(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_FILE_LINES, f"{path.relative_to(SHARED.parent)}: {lines} lines"


def test_few_long_functions():
    long = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > LONG_FUNCTION_LINES:
                    long.append(f"{name}.{node.name}: {length} lines")
    assert len(long) <= MAX_LONG_FUNCTIONS, "\n".join(long)


def test_the_checker_sees_a_cycle_an_upward_import_and_a_private_name():
    """The rules above can fail: the same functions flag made-up edges."""
    made_up = [("shared.base.types", "shared.engine.config", [], 1),
               ("shared.engine.config", "shared.base.types", ["_hidden"], 2)]
    assert cycles(made_up) == [["shared.base.types", "shared.engine.config"]]
    assert role_of("shared.engine.config") > role_of("shared.base.types")
    assert [n for n in made_up[1][2] if n.startswith("_")] == ["_hidden"]


# A provider is one registry entry: no other code names one. Exempt: the registry, the tests,
# the docs, and names that only coincide with a provider's (each with its reason).
PROVIDER_REGISTRY = SHARED / "engine" / "backends" / "registry.py"
COINCIDENT_NAMES = {
    ("shared/cli/score.py", "local"): "the --engine choice (this process), not a provider",
    ("shared/runs/batch.py", "local"): "the engine named local (this process), not a provider",
    ("shared/engine/backends/openai_compat.py", "openai-compatible"):
        "the backend's protocol kind (a cache-key field), not a provider",
}


def provider_literals(source: str, names: set[str]) -> list[tuple[int, str]]:
    """(line, name) of every string literal in ``source`` that is exactly a provider name."""
    return [(node.lineno, node.value) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and node.value in names]


def test_provider_names_are_written_only_in_the_registry():
    from shared.engine.backends.registry import PROVIDERS

    names = set(PROVIDERS)
    root = SHARED.parent
    code = [*SHARED.rglob("*.py"), *(root / "metrics").rglob("*.py"), root / "app.py"]
    found = [f"{rel}:{line} writes {name!r}"
             for path in code if path != PROVIDER_REGISTRY
             for rel in [path.relative_to(root).as_posix()]
             for line, name in provider_literals(path.read_text(encoding="utf-8"), names)
             if (rel, name) not in COINCIDENT_NAMES]
    assert not found, ("name providers through the registry (shared.engine.backends.registry: "
                       "PROVIDERS, LOCAL, providers_with, require):\n" + "\n".join(found))
    # the check can fail: it flags a made-up line that names a provider
    assert provider_literals(f"if provider == {next(iter(names))!r}: pass", names)
