"""The house stays standing: ``shared/`` is grouped by role and every import points down.

Roles from the top: front ends -> certification -> analysis -> traces -> runs -> metric kit ->
judge engine -> base (docs/ARCHITECTURE.md draws them). Read from the code's own imports
(``ast``), function-level and ``TYPE_CHECKING`` imports included, so a lazy import cannot hide a
cycle or an upward arrow.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection
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
    ("traces", ("shared.traces",)),
    ("analysis", ("shared.analysis",)),
    ("certification", ("shared.certification",)),
    ("front ends", ("shared.cli", "shared.demo", "shared.integrations", "shared.tools",
                    "shared.spaces",
                    "shared.__main__")),
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


def resolve(importer: str, node: ast.ImportFrom, is_package: bool,
            known: Collection[str]) -> list[tuple[str, list[str]]]:
    """The modules of ``shared`` that one ``from ... import ...`` reads, each with the names
    taken from it (a name that is itself a submodule is an import of that submodule)."""
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
        if f"{target}.{alias.name}" in known:
            found.append((f"{target}.{alias.name}", []))
        else:
            plain.append(alias.name)
    if plain:
        found.append((target, plain))
    return found


def read_imports(importer: str, source: str, is_package: bool,
                 known: Collection[str]) -> list[tuple[str, list[str], int]]:
    """(imported module, names taken, line) for every import of a module in ``known`` that
    ``source`` (the module ``importer``) makes, each package ``__init__`` Python runs on the way
    included: ``from .backends.registry import X`` in ``shared.engine.config`` also runs
    ``shared.engine.backends``. The packages around ``importer`` itself ran before it did, so
    they are not edges."""
    found: list[tuple[str, list[str], int]] = []
    for node in ast.walk(ast.parse(source)):
        targets: list[tuple[str, list[str]]] = []
        if isinstance(node, ast.ImportFrom):
            targets = resolve(importer, node, is_package, known)
        elif isinstance(node, ast.Import):
            targets = [(alias.name, []) for alias in node.names
                       if alias.name.startswith("shared.")]
        for target, names in targets:
            parts = target.split(".")
            for depth in range(1, len(parts)):
                package = ".".join(parts[:depth])
                inside = importer == package or importer.startswith(package + ".")
                if package in known and not inside:
                    found.append((package, [], node.lineno))
            found.append((target, names, node.lineno))
    return [(t, n, line) for t, n, line in found if t in known and t != importer]


def imports() -> list[tuple[str, str, list[str], int]]:
    """(importer, imported module, names taken, line) for every import between modules."""
    return [(name, target, names, line)
            for name, path in MODULES.items()
            for target, names, line in read_imports(name, path.read_text(encoding="utf-8"),
                                                    path.name == "__init__.py", MODULES)]


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


ROOT = SHARED.parent
FILES = sorted([*SHARED.rglob("*.py"), *(ROOT / "metrics").rglob("*.py"),
                *(ROOT / "bench").rglob("*.py")])
# code outside the package: the metric scripts, the benchmarks, the tests, the demo entry point
OUTSIDE = sorted([*(ROOT / "metrics").rglob("*.py"), *(ROOT / "bench").rglob("*.py"),
                  *(ROOT / "tests").rglob("*.py"), ROOT / "app.py"])
# the project's own top-level import names: the package, and the modules the benchmarks and the
# tests import by file name (their folder is on the path)
OWN_NAMES = {"shared", "metrics", "bench", "tests", *(p.stem for p in OUTSIDE)}


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_file_is_too_long(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_FILE_LINES, f"{path.relative_to(ROOT)}: {lines} lines"


def private_imports(source: str, own: Collection[str]) -> list[str]:
    """``line: module.name`` for every private name ``source`` takes from one of the project's
    own modules (``own``: their top-level names; a third-party reference may be read as is)."""
    return [f"{node.lineno}: {node.module}.{alias.name}"
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
            and node.module.split(".")[0] in own
            for alias in node.names
            if alias.name.startswith("_") and not alias.name.startswith("__")]


def test_no_private_name_is_imported_outside_the_package():
    private = [f"{path.relative_to(ROOT)}:{found}" for path in OUTSIDE
               for found in private_imports(path.read_text(encoding="utf-8"), OWN_NAMES)]
    assert not private, "\n".join(private)


def command_modules() -> list[str]:
    """The CLI's command modules: those of ``shared.cli`` that define ``add_arguments`` and
    ``run`` (``main`` dispatches to them, ``common`` holds what they share)."""
    found = []
    for name, path in MODULES.items():
        if name.startswith("shared.cli."):
            defined = {node.name for node in ast.parse(path.read_text(encoding="utf-8")).body
                       if isinstance(node, ast.FunctionDef)}
            if {"add_arguments", "run"} <= defined:
                found.append(name)
    return found


def test_no_cli_command_imports_another():
    commands = command_modules()
    assert len(commands) >= 3, commands  # score, compare, agree at least: the derivation works
    crossing = [f"{importer}:{line} imports {target}"
                for importer, target, _, line in imports()
                if importer in commands and target in commands]
    assert not crossing, "\n".join(crossing)


def test_the_user_error_type_is_defined_once_in_base():
    """``UserInputError`` (bad input from the user) lives in ``base/``; the package's own modules
    import it from there, the old name ``runs.summary.BatchInputError`` is kept for scripts."""
    defined = [name for name, path in MODULES.items()
               for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
               if isinstance(node, ast.ClassDef) and node.name == "UserInputError"]
    assert defined == ["shared.base.errors"]
    through_alias = [f"{importer}:{line}" for importer, target, names, line in imports()
                     if target == "shared.runs.summary" and "BatchInputError" in names]
    assert not through_alias, through_alias


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


def test_the_import_reader_sees_every_kind_of_import():
    """Made-up source through the reader: relative and absolute, submodule and name, lazy and
    ``TYPE_CHECKING`` imports, and the package ``__init__`` each one runs on the way."""
    known = {"shared", "shared.engine", "shared.engine.config", "shared.engine.backends",
             "shared.engine.backends.registry", "shared.base", "shared.base.types",
             "shared.kit", "shared.kit.steps"}
    source = (
        "from typing import TYPE_CHECKING\n"
        "import json\n"
        "from .backends.registry import LOCAL\n"        # line 3: the package runs first
        "from ..base import types\n"                      # line 4: a submodule by name
        "if TYPE_CHECKING:\n"
        "    from shared.kit.steps import _hidden\n"      # line 6: absolute, private
        "def f():\n"
        "    import shared.base.types\n"                  # line 8: lazy
    )
    found = read_imports("shared.engine.config", source, False, known)
    assert sorted(found) == sorted([
        ("shared.engine.backends", [], 3), ("shared.engine.backends.registry", ["LOCAL"], 3),
        ("shared.base", [], 4), ("shared.base.types", [], 4),
        ("shared.kit", [], 6), ("shared.kit.steps", ["_hidden"], 6),
        ("shared.base", [], 8), ("shared.base.types", [], 8)])
    # a package's own __init__ reads relative imports from itself, and its parents are no edge
    assert read_imports("shared.engine.backends", "from . import registry\n", True, known) == [
        ("shared.engine.backends.registry", [], 1)]
    # the implicit edge closes the loop an explicit reading would miss
    edges = [("shared.engine.config", t, n, line) for t, n, line in found] + [
        ("shared.engine.backends", "shared.engine.config", [], 1)]
    assert ["shared.engine.backends", "shared.engine.config"] in cycles(edges)
    assert private_imports("from shared.kit import _x, y\nfrom json import _default\n",
                           {"shared"}) == ["1: shared.kit._x"]


# A provider is one registry entry: no other code names one. Exempt: the registry, the tests,
# the docs, and names that only coincide with a provider's (each with its reason).
PROVIDER_REGISTRY = SHARED / "engine" / "backends" / "registry.py"
COINCIDENT_NAMES = {
    ("shared/runs/engines.py", "local"): "the engine named local (this process), not a provider",
    ("shared/base/defaults.py", "local"): "the package's extra named local "
                                            "(judge-metrics[local]), not a provider",
    ("shared/engine/backends/openai_compat.py", "openai-compatible"):
        "the backend's protocol kind (a cache-key field), not a provider",
}


def docstring_nodes(tree: ast.AST) -> set[int]:
    """The ids of the docstrings' nodes in ``tree`` (prose for readers, not code)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def provider_literals(source: str, names: set[str]) -> list[tuple[int, str]]:
    """(line, name) of every string in ``source`` (a literal, or a piece of an f-string; not a
    docstring) that is a provider name or quotes one inside a text: ``'name'``, ``"name"``,
    ``[name]``, a backquoted name or ``provider=name``, as a message or a helper would write it
    (``openai`` in ``'openai-compatible'`` is not a mention of ``openai``)."""
    tree = ast.parse(source)
    prose = docstring_nodes(tree)
    patterns = {name: re.compile(r"(?:provider\s*=\s*['\"]?|['\"\[`])" + re.escape(name)
                                 + r"(?![\w.-])") for name in names}
    return [(node.lineno, name) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in prose
            for name in sorted(names)
            if node.value == name or patterns[name].search(node.value)]


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
    # the check can fail: it flags made-up lines that name a provider, as a value or in a
    # helper's message, and leaves a docstring and a longer name alone
    assert provider_literals("if provider == 'gemini': pass", names) == [(1, "gemini")]
    helper = ('def sdk():\n    """Import the SDK (provider=\'gemini\')."""\n'
              '    print(f"provider=\'gemini\' needs the SDK {x}")\n'
              '    print("pip install \'judge-metrics[gemini]\'")\n')
    assert sorted(provider_literals(helper, names)) == [(3, "gemini"), (4, "gemini")]
    assert provider_literals("kind = 'openai-compatible'", {"openai"}) == []


# Every module of shared/ is named where docs/ARCHITECTURE.md draws the roles, under its own
# folder: the picture lists each folder's modules after the folder's path (`engine/backends/:`),
# a module directly in shared/ by its file name (`spaces.py`).
ARCHITECTURE = ROOT / "docs" / "ARCHITECTURE.md"
# a folder's path followed by a colon, or a file name: where the text of one folder begins
PICTURE_MARK = re.compile(r"(?<![\w/.`-])((?:[a-z_]+/)+(?=:)|\w+\.py\b)")


def layout_section(text: str) -> str:
    """The part of docs/ARCHITECTURE.md that draws ``shared/`` by role."""
    start = text.index("### shared/, by role")
    return text[start:text.index("\n### ", start + 1)]


def folder_texts(section: str) -> dict[str, str]:
    """The picture's text under each folder path (``engine/backends/`` -> the text from that
    path up to the next folder's path or file name), and under ``""`` the file names of the
    modules directly in ``shared/`` that the picture names."""
    fence = section.index("```")
    picture = section[fence:section.index("```", fence + 3)]
    marks = list(PICTURE_MARK.finditer(picture))
    texts: dict[str, str] = {"": ""}
    for mark, after in zip(marks, [*marks[1:], None], strict=True):
        label = mark.group(1)
        if label.endswith(".py"):
            texts[""] += f" {label}"
        else:
            end = after.start() if after else len(picture)
            texts[label] = texts.get(label, "") + picture[mark.end():end]
    return texts


def unnamed_modules(section: str, modules: Collection[str]) -> list[str]:
    """The modules (``shared.x.y``) that the picture does not name under their own folder: the
    module ``shared.engine.backends.classes`` needs the word ``classes`` in the text under
    ``engine/backends/``, a package (its ``__init__``) its folder's path, a module directly in
    ``shared/`` its file name. A name written under another folder does not count."""
    texts = folder_texts(section)

    def named(word: str, text: str) -> bool:
        return re.search(rf"(?<![\w.]){re.escape(word)}(?!\w)", text) is not None

    missing = []
    for module in modules:
        parts = module.split(".")[1:]
        if not parts:
            continue
        package = "".join(f"{p}/" for p in parts)
        folder, name = "".join(f"{p}/" for p in parts[:-1]), parts[-1]
        if package in texts:  # a package: its folder is drawn
            continue
        if folder == "":
            found = named(f"{name}.py", texts[""])
        else:
            found = folder in texts and named(name, texts[folder])
        if not found:
            missing.append(module)
    return sorted(missing)


def stale_folders(section: str, modules: Collection[str]) -> list[str]:
    """The folder paths the picture draws that hold no module of ``modules``."""
    folders = {"".join(f"{p}/" for p in m.split(".")[1:-1]) for m in modules}
    return sorted(f for f in folder_texts(section) if f and f not in folders)


def test_every_module_is_named_in_the_architecture():
    section = layout_section(ARCHITECTURE.read_text(encoding="utf-8"))
    missing = unnamed_modules(section, MODULES)
    assert not missing, ("docs/ARCHITECTURE.md (\"shared/, by role\") names no "
                         f"{', '.join(missing)} under its folder: write each module's name and "
                         "what it is in the text after its folder's path (`runs/:`, "
                         "`engine/backends/:`), a module directly in shared/ as `name.py`")
    stale = stale_folders(section, MODULES)
    assert not stale, f"docs/ARCHITECTURE.md draws folders that hold no module: {stale}"
    # the check can fail: a module the picture does not name is found
    assert unnamed_modules(section, ["shared.engine.backends.made_up_batches"]) == [
        "shared.engine.backends.made_up_batches"]


def test_the_checker_sees_a_module_named_only_under_another_folder():
    """A word of the picture counts only under the module's own folder: ``verdicts`` under
    ``analysis/`` does not document ``engine/backends/verdicts.py``, and a module directly in
    ``shared/`` needs its file name."""
    section = ("### shared/, by role\n```\n"
               "  analysis     analysis/: gates (a gate), made_up (named here only)\n"
               "               analysis/report/: page\n"
               "  engine       engine/: config\n"
               "               engine/backends/: registry; spaces.py (the Space builder)\n"
               "  kit          kit/gone/: old (a folder that was moved)\n"
               "```\n")
    modules = ["shared.analysis", "shared.analysis.gates", "shared.analysis.made_up",
               "shared.analysis.report", "shared.analysis.report.page",
               "shared.analysis.report.made_up", "shared.engine.made_up",
               "shared.engine.backends.registry", "shared.engine.backends.gates",
               "shared.spaces", "shared.registry"]
    assert unnamed_modules(section, modules) == [
        "shared.analysis.report.made_up", "shared.engine.backends.gates",
        "shared.engine.made_up", "shared.registry"]
    assert stale_folders(section, modules) == ["kit/gone/"]
    real = layout_section(ARCHITECTURE.read_text(encoding="utf-8"))
    assert unnamed_modules(real, ["shared.engine.backends.verdicts",
                                  "shared.analysis.classes"]) == [
        "shared.analysis.classes", "shared.engine.backends.verdicts"]
