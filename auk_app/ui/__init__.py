"""The presentation layer: the Gradio app and what it hands out (files, figures, tables, wording).

Only this package imports gradio, and it reaches the models through the Studio and the request
types alone (tests/app/test_layering.py holds both rules). Entry points: ``ui.app.build_demo``
and ``ui.app.launch_options``. Nothing is imported here, so the package's modules import each other
without going round through this file.
"""
