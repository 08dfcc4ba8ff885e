"""The presentation layer: the Gradio app and what it hands out (files, figures, tables, wording).

Only this package imports gradio, and it reaches the models through the Studio and the request
types alone (tests/app/test_layering.py holds both rules).
"""

from auk_app.ui.app import build_demo, launch_options
from auk_app.ui.text import serving_line

__all__ = ["build_demo", "launch_options", "serving_line"]
