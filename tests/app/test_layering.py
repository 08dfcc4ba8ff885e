"""The import rule: gradio only in the UI layer, and the model packages never reach up into it."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "auk_app"
UI_LAYER = {"ui.py", "ui_handlers.py", "ui_runs.py"}


def _imports(path: Path, source: str | None = None) -> set[str]:
    """Every module a file may import, absolute: ``from auk_app import service`` gives both
    ``auk_app`` and ``auk_app.service``; relative imports are resolved against the file's package."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text() if source is None else source)):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            package = path.relative_to(PACKAGE.parent).with_suffix("").parts[: -node.level] if node.level else ()
            base = ".".join([*package, *([node.module] if node.module else [])])
            names |= {base} | {f"{base}.{alias.name}" for alias in node.names}
    return names


def test_the_import_reader_sees_names_and_relative_imports():
    source = "from auk_app import service\nfrom ..ui import build_demo\nfrom . import tta\n"
    names = _imports(PACKAGE / "audex" / "any_module.py", source)
    assert {"auk_app.service", "auk_app.ui", "auk_app.audex.tta"} <= names


def test_only_the_ui_layer_imports_gradio():
    importers = {p.name for p in PACKAGE.rglob("*.py") if any(n.split(".")[0] == "gradio" for n in _imports(p))}
    assert importers == UI_LAYER


def test_models_and_pipelines_do_not_import_the_app_layer():
    app_layer = {f"auk_app.{p.stem}" for p in PACKAGE.glob("*.py")} - {
        "auk_app.config", "auk_app.errors", "auk_app.dsp", "auk_app.runtime", "auk_app.weights", "auk_app.audio_io",
        "auk_app.validate", "auk_app.resolve", "auk_app.__init__",
    }
    for path in [*PACKAGE.glob("auk/*.py"), *PACKAGE.glob("audex/*.py")]:
        assert not (_imports(path) & app_layer), path


# What the UI layer may import from the package: the Studio, the request/result types, and the
# presentation modules (wording, files, tables, the upload check, the instruction builder).
UI_MAY_IMPORT = {
    "auk_app", "auk_app.service", "auk_app.auk.request", "auk_app.audex.request", "auk_app.errors",
    "auk_app.instructions", "auk_app.outputs", "auk_app.rvq_table", "auk_app.ui_text", "auk_app.upload_check",
    "auk_app.ui_runs", "auk_app.ui_handlers", "auk_app.zerogpu",
}


def _modules(path: Path) -> set[str]:
    """The package's modules a file imports: of ``from a import b`` only what is a module itself."""
    def is_module(name: str) -> bool:
        file = PACKAGE.parent.joinpath(*name.split("."))
        return file.with_suffix(".py").is_file() or (file / "__init__.py").is_file()

    return {name for name in _imports(path) if name.split(".")[0] == "auk_app" and is_module(name)}


def test_the_ui_talks_only_to_the_studio_and_the_request_types():
    for name in UI_LAYER:
        assert _modules(PACKAGE / name) - {"auk_app"} <= UI_MAY_IMPORT, (name, _modules(PACKAGE / name) - UI_MAY_IMPORT)
