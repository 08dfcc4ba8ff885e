"""The README's two set-up commands stay true: CI runs exactly the second one."""

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
    assert commands[1].endswith("pip install -r requirements.txt && python -m pytest")


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
