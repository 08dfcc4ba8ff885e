"""The import rule: gradio only in the UI layer, the model packages never reach up into it nor into
the demo, and no circle, counting the imports a ``"module:attribute"`` string makes at run time."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "auk_app"
_TARGET = re.compile(r"^(auk_app(?:\.\w+)+):\w+$")  # what registry-style loaders import by name


def _imports(path: Path, source: str | None = None) -> set[str]:
    """Every module a file may import, absolute: ``from auk_app import service`` gives both
    ``auk_app`` and ``auk_app.service``; relative imports are resolved against the file's package;
    a ``"auk_app.x.y:Name"`` string gives ``auk_app.x.y``."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text() if source is None else source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and (target := _TARGET.match(node.value)):
            names.add(target.group(1))
        elif isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            package = path.relative_to(PACKAGE.parent).with_suffix("").parts[: -node.level] if node.level else ()
            base = ".".join([*package, *([node.module] if node.module else [])])
            names |= {base} | {f"{base}.{alias.name}" for alias in node.names}
    return names


def test_the_import_reader_sees_names_relative_imports_and_import_strings():
    source = "from auk_app import service\nfrom ..ui import build_demo\nfrom . import tta\nX = 'auk_app.demo.minilm:M'\n"
    names = _imports(PACKAGE / "audex" / "any_module.py", source)
    assert {"auk_app.service", "auk_app.ui", "auk_app.audex.tta", "auk_app.demo.minilm"} <= names


def _modules(path: Path) -> set[str]:
    """The package's modules a file imports: of ``from a import b`` only what is a module itself."""
    def is_module(name: str) -> bool:
        file = PACKAGE.parent.joinpath(*name.split("."))
        return file.with_suffix(".py").is_file() or (file / "__init__.py").is_file()

    return {name for name in _imports(path) if name.split(".")[0] == "auk_app" and is_module(name)}


UI_PACKAGE = PACKAGE / "ui"
# Of the model packages the UI may use only the request/result types and the token layout's constants.
UI_MAY_USE = {"auk_app.auk.request", "auk_app.audex.request", "auk_app.audex.params", "auk_app.audex.tta"}


def test_only_the_ui_package_imports_gradio():
    importers = {p for p in PACKAGE.rglob("*.py") if any(n.split(".")[0] == "gradio" for n in _imports(p))}
    assert importers and all(p.parent == UI_PACKAGE for p in importers), importers


def test_the_ui_reaches_the_models_only_through_the_studio_and_the_request_types():
    for path in UI_PACKAGE.glob("*.py"):
        models = {m for m in _modules(path) if m.startswith(("auk_app.auk.", "auk_app.audex."))}
        assert models <= UI_MAY_USE, (path.name, sorted(models - UI_MAY_USE))


def test_models_and_pipelines_do_not_import_the_app_layer():
    app_layer = {f"auk_app.{p.stem}" for p in PACKAGE.glob("*.py")} - {
        "auk_app.config", "auk_app.errors", "auk_app.dsp", "auk_app.runtime", "auk_app.weights", "auk_app.audio_io",
        "auk_app.validate", "auk_app.resolve", "auk_app.progress", "auk_app.urls", "auk_app.bounded_reads",
        "auk_app.__init__", "auk_app.knobs", "auk_app.plugins", "auk_app.quantize", "auk_app.transformers_import",
    } | {f"auk_app.ui.{p.stem}" for p in UI_PACKAGE.glob("*.py")} | {"auk_app.ui"}
    for path in [*PACKAGE.glob("auk/*.py"), *PACKAGE.glob("audex/*.py")]:
        assert not (_modules(path) & app_layer), path


def test_the_models_never_reach_the_demo_even_by_name():
    """The demo plugs into the registry from its own package; a release's path never names it."""
    for path in [*PACKAGE.glob("auk/*.py"), *PACKAGE.glob("audex/*.py")]:
        assert not {m for m in _modules(path) if m.startswith("auk_app.demo")}, path


def _import_graph() -> dict[str, set[str]]:
    """Module → the package's modules it imports (a package's ``__init__`` is the package's node)."""
    graph = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        graph[name] = _modules(path) - {name}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph``, or None (depth-first search for a back edge)."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = "done"
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_cycle_finder_finds_one():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_no_module_imports_itself_round_a_circle():
    """No import circles, deferred imports included: each module can be read bottom up."""
    assert _cycle(_import_graph()) is None


def _room(module: str) -> str:
    """The room a module stands in: a top-level module, or a whole subpackage (auk/, audex/, ui/ …)."""
    return ".".join(module.split(".")[:2])


def test_rooms_import_one_way():
    """Taken room by room (a subpackage as one room), the imports, string imports included, have no
    circle: every room stands above all it imports, so no arrow runs back up a layer."""
    rooms: dict[str, set[str]] = {}
    for module, imported in _import_graph().items():
        rooms.setdefault(_room(module), set()).update(_room(m) for m in imported)
    rooms = {room: targets - {room} for room, targets in rooms.items()}
    assert _cycle(rooms) is None


def test_auk_and_audex_import_nothing_of_each_other():
    for own, other in (("auk", "audex"), ("audex", "auk")):
        for path in PACKAGE.glob(f"{own}/*.py"):
            assert not {m for m in _modules(path) if m.startswith(f"auk_app.{other}.")}, path
