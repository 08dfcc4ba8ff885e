"""The app's public endpoints as Model Context Protocol tools, on Gradio's own MCP server.

``launch(mcp_server=True)`` (``app.py --mcp``, or ``GRADIO_MCP_SERVER=true``, which Gradio reads)
serves every named endpoint as a tool over Streamable HTTP at ``/gradio_api/mcp/``. A tool's
description is its endpoint's ``api_description`` and its parameters' docs are the docstring's
"Parameters:" lines, both written from the knob schema (:func:`auk_app.ui.handlers.taking`); a call
goes through Gradio's loopback client into the app's own queue, so the validators, the admission cap
and the refusals are the page's. Files go in as URLs (an upload's ``/gradio_api/file=`` URL, or
any http(s) URL) and come out as URLs.

Gradio 6.31 gets three things wrong for an agent, set right here on the launched server
(:func:`serve_tools`, after ``launch``, since Gradio builds the server inside it):

* it names a tool after its function (``_edit_audio``); here after its endpoint (``edit_audio``),
  as the API, the README and the CLI name it;
* a call without a progress token gets an endpoint of several outputs as one text, the Python repr
  of the client's tuple, and fails outright on one with a ``gr.State`` output ("pop index out of
  range", as /edit_audio and /text_to_audio have); here every output is its own content, as Gradio
  already does for a call that sends a progress token;
* a JSON output (a manifest, a report) comes as a Python repr; here as JSON, with each file in it
  as its URL.

And one thing the guide's own flow needs on a machine of one's own: Gradio fetches an input's URL
through its SSRF guard, which refuses private and loopback addresses, so the URL its upload tool
hands back from an app at 127.0.0.1 could not be used; here a URL of this server's file route is
read as the file it names, when that is a file the route serves (one in Gradio's upload folder).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import anyio
from gradio import processing_utils
from gradio.utils import get_upload_folder, is_in_or_equal
from gradio_client import handle_file
from gradio_client.utils import is_file_obj_with_meta, is_http_url_like, traverse
from pydantic import BaseModel

FILE_ROUTE = "/gradio_api/file="  # Gradio's route serving a file by its path


def serve_tools(blocks) -> bool:
    """Adjust the MCP server Gradio launched for ``blocks``; False when it launched none."""
    server = getattr(blocks, "mcp_server_obj", None)
    if server is None or not getattr(blocks, "mcp_server", False):
        return False
    server.tool_to_endpoint = {server.tool_prefix + endpoint.lstrip("/"): endpoint
                               for endpoint in server.tool_to_endpoint.values()}
    server._execute_tool_without_progress = _every_output
    convert = server.convert_strings_to_filedata
    server.convert_strings_to_filedata = lambda value, positions: traverse(
        convert(value, positions), _served_here, is_file_obj_with_meta)
    postprocess = server.postprocess_output_data
    server.postprocess_output_data = lambda data, root_url: postprocess(
        [_as_text(value) for value in processing_utils.add_root_url(list(data), root_url, None)], root_url)
    return True


async def _every_output(job) -> list[Any]:
    """The job's outputs, one per output component (the client packs several into a tuple)."""
    result = await anyio.to_thread.run_sync(job.result)
    return list(result) if isinstance(result, tuple) else [result]


def _served_here(file: dict) -> dict:
    """An input naming a URL of this server's file route as the file itself, when the route serves it."""
    url = file.get("path")
    if not isinstance(url, str) or not is_http_url_like(url) or FILE_ROUTE not in urlparse(url).path:
        return file
    local = Path(unquote(urlparse(url).path.split(FILE_ROUTE, 1)[1])).resolve()
    if local.is_file() and is_in_or_equal(str(local), get_upload_folder()):
        return handle_file(str(local))
    return file


def _as_text(value: Any) -> Any:
    """A JSON output as JSON text, its files as their URLs; a file, or a plain value, unchanged
    (Gradio shows a file as its URL, an image as the image too). An endpoint outside the queue
    (/model_info) hands over its outputs as Gradio's pydantic models, not yet as JSON."""
    if isinstance(value, BaseModel):
        value = value.model_dump()
    if not isinstance(value, (dict, list)) or is_file_obj_with_meta(value):
        return value
    urls = traverse(value, lambda file: file.get("url") or file.get("path"), is_file_obj_with_meta)
    return json.dumps(urls, ensure_ascii=False)
