"""The README stays a short, true start: two set-up commands (CI runs exactly the second one), the
URL right after the first, links that resolve, and the speed figures in docs/ rendered from a record."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _setup_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Set up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.+?)\n```", section)


def test_readme_opens_with_exactly_two_setup_commands():
    commands = _setup_commands()
    assert len(commands) == 2
    assert commands[0] == "pip install -r requirements.txt && python app.py"
    assert commands[1].endswith("pip install -r requirements.txt -r requirements-dev.txt && python -m pytest")


def test_the_runtime_requirements_hold_no_test_tool():
    """A Space installs requirements.txt: the test tools live in requirements-dev.txt alone."""
    runtime = (ROOT / "requirements.txt").read_text().lower()
    for tool in ("pytest", "xdist", "hypothesis", "playwright"):
        assert tool not in runtime, tool
    assert "pytest==" in (ROOT / "requirements-dev.txt").read_text()


def test_the_url_follows_the_run_command():
    text = (ROOT / "README.md").read_text()
    after_run = text.split(f"```bash\n{_setup_commands()[0]}\n```", 1)[1]
    assert after_run.lstrip("\n").startswith("Then open http://127.0.0.1:7860")


def _anchors(path: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    prose = re.sub(r"```.*?```", "", path.read_text(), flags=re.DOTALL)  # a '# comment' in a code block is no heading
    headings = re.findall(r"^#+ (.+)$", prose, flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


def test_readme_is_short():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 200


def test_links_between_the_readme_and_docs_resolve():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    checked = 0
    for page in pages:
        for target, anchor in re.findall(r"\]\(([^)#:\s]*)(?:#([^)\s]*))?\)", page.read_text()):
            linked = (page.parent / target).resolve() if target else page
            assert linked.is_file(), f"{page.name} links to {target}"
            assert not anchor or anchor in _anchors(linked), f"{page.name} links to {target}#{anchor}"
            checked += 1
    assert checked >= len(pages)


def test_ci_runs_the_readme_test_command():
    ci_lines = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert ci_lines[-1] == _setup_commands()[1]


def test_spaces_front_matter_pins_the_installed_gradio():
    front = (ROOT / "README.md").read_text().split("---")[1]
    version = re.search(r"sdk_version: (\S+)", front).group(1)
    assert f"gradio=={version}" in (ROOT / "requirements.txt").read_text().splitlines()
    assert "app_file: app.py" in front


def test_the_speed_section_is_rendered_from_the_newest_gpu_record():
    from bench.speed_table import SPEED_DOC, newest_record, render, section

    assert section(SPEED_DOC.read_text()) == render(newest_record())
