"""A minimal Chrome DevTools Protocol driver for Debian's chromium, over ``--remote-debugging-pipe``.

The pipe transport (commands on the browser's fd 3, replies on fd 4, each message JSON ended by
a NUL byte) needs no websocket package and no port, and never downloads a browser. Clicks and
typing go through ``Input.dispatchMouseEvent``/``Input.insertText`` at the element's position,
as a person's would, so the page's own event handlers run.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
)


class CDPError(RuntimeError):
    pass


def _high_fd(fd: int) -> int:
    """A copy of ``fd`` numbered 10 or more, so the 3/4 redirections cannot clobber it."""
    copy = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return copy


class Browser:
    """One headless chromium with one page; ``close()`` ends the process."""

    def __init__(self, user_data_dir: str | Path, *, width: int = 1440, height: int = 1000, executable: str = CHROMIUM):
        cmd_read, self._cmd_write = os.pipe()
        self._resp_read, resp_write = os.pipe()
        cmd_read, resp_write = _high_fd(cmd_read), _high_fd(resp_write)
        # bash (dash takes one-digit fds only) moves the pipe ends to the fds chromium expects, then execs it (no preexec_fn in a threaded test).
        script = f'exec "$0" "$@" 3<&{cmd_read} 4>&{resp_write} {cmd_read}<&- {resp_write}>&-'
        self.process = subprocess.Popen(
            ["/bin/bash", "-c", script, executable, *FLAGS, f"--user-data-dir={user_data_dir}",
             "--remote-debugging-pipe", f"--window-size={width},{height}", "about:blank"],
            pass_fds=(cmd_read, resp_write), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        os.close(cmd_read)
        os.close(resp_write)
        self._next_id = 0
        self._replies: dict[int, queue.Queue] = {}
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "DOM"):
            self.call(f"{domain}.enable")
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    # ------------------------------------------------------------------ transport

    def _read(self) -> None:
        buffer = b""
        while True:
            try:
                chunk = os.read(self._resp_read, 1 << 16)
            except OSError:
                return
            if not chunk:
                return
            buffer += chunk
            while b"\0" in buffer:
                raw, buffer = buffer.split(b"\0", 1)
                message = json.loads(raw)
                if "id" in message:
                    with self._lock:
                        box = self._replies.get(message["id"])
                    if box is not None:
                        box.put(message)
                elif message.get("method") == "Page.javascriptDialogOpening":
                    # a page's dialog ("leave site?" on navigating away) would hold the page: accept it
                    self._post("Page.handleJavaScriptDialog", {"accept": True}, message.get("sessionId"))

    def _post(self, method: str, params: dict, session: str | None, box: queue.Queue | None = None) -> int:
        """Write one command; its reply goes to ``box`` when one is given."""
        with self._lock:
            self._next_id += 1
            message_id = self._next_id
            if box is not None:
                self._replies[message_id] = box
            message = {"id": message_id, "method": method, "params": params}
            if session:
                message["sessionId"] = session
            os.write(self._cmd_write, json.dumps(message).encode() + b"\0")  # one writer at a time
        return message_id

    def send(self, method: str, params: dict | None = None, *, session: str | None = None, timeout: float = 60) -> dict:
        box: queue.Queue = queue.Queue()
        message_id = self._post(method, params or {}, session, box)
        try:
            reply = box.get(timeout=timeout)
        except queue.Empty:
            raise CDPError(f"{method}: no reply within {timeout} s") from None
        finally:
            with self._lock:
                self._replies.pop(message_id, None)
        if "error" in reply:
            raise CDPError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def call(self, method: str, params: dict | None = None, **kwargs) -> dict:
        """A command to the page's session."""
        return self.send(method, params, session=self.session, **kwargs)

    # ------------------------------------------------------------------ page helpers

    def goto(self, url: str) -> None:
        """Load ``url`` afresh; returns once the new document has replaced the old one, so a wait
        that follows cannot pass on the page being left."""
        self.evaluate("window.__left = true")
        self.call("Page.navigate", {"url": url})
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if self.evaluate("!window.__left && document.readyState !== 'loading'"):
                    return
            except CDPError:  # the old document went away during the call
                pass
            time.sleep(0.1)
        raise TimeoutError(f"{url} did not replace the page within 60 s")

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            raise CDPError(f"{expression[:80]}: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def wait_for(self, expression: str, *, timeout: float = 60, interval: float = 0.25) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(interval)
        raise TimeoutError(f"waited {timeout} s for: {expression}")

    def click(self, selector: str) -> None:
        """Scroll ``selector`` into view and click its centre with the mouse."""
        box = self.wait_for(
            f"""(() => {{ const el = document.querySelector({json.dumps(selector)});
                if (!el) return null; el.scrollIntoView({{block: 'center'}});
                const r = el.getBoundingClientRect();
                return r.width > 0 ? {{x: r.x + r.width / 2, y: r.y + r.height / 2}} : null; }})()"""
        )
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent",
                      {"type": kind, "x": box["x"], "y": box["y"], "button": "left", "clickCount": 1})

    def click_until(self, selector: str, expression: str, *, attempts: int = 5, wait: float = 10) -> Any:
        """Click ``selector`` until ``expression`` holds. A click can land where the element was a
        moment before, while the page still lays itself out; so only for clicks that are safe to
        repeat (a tab, not an accordion)."""
        for attempt in range(attempts):
            self.click(selector)
            try:
                return self.wait_for(expression, timeout=wait)
            except TimeoutError:
                if attempt == attempts - 1:
                    raise

    def type_into(self, selector: str, text: str, *, replace: bool = False) -> None:
        """Click into a text field and type, after selecting what is there when ``replace``."""
        self.click(selector)
        if replace:
            self.evaluate("document.activeElement.select()")
        self.call("Input.insertText", {"text": text})

    def press(self, key: str, *, ctrl: bool = False) -> None:
        """Press and release ``key`` ("Enter") in the focused element, with Ctrl held where asked."""
        codes = {"Enter": 13}
        for kind in ("keyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", {"type": kind, "key": key, "code": key, "modifiers": 2 if ctrl else 0,
                                                 "windowsVirtualKeyCode": codes[key]})

    def set_files(self, selector: str, paths: list[str | Path]) -> None:
        root = self.call("DOM.getDocument", {"depth": -1, "pierce": True})["root"]["nodeId"]
        node = self.call("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
        if not node:
            raise CDPError(f"no element matches {selector}")
        self.call("DOM.setFileInputFiles", {"nodeId": node, "files": [str(p) for p in paths]})

    def screenshot(self, path: str | Path, *, full_page: bool = True) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.call("Page.getLayoutMetrics")["cssContentSize"]
            params.update(captureBeyondViewport=True,
                          clip={"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1})
        data = self.call("Page.captureScreenshot", params)["data"]
        path = Path(path)
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=10)
        except (CDPError, OSError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for fd in (self._cmd_write, self._resp_read):
            try:
                os.close(fd)
            except OSError:
                pass


@pytest.fixture(autouse=True, scope="module")
def needs_chromium():
    """A browser test module's guard: skipped without Debian's chromium, except under CI, where a
    missing browser fails."""
    if not Path(CHROMIUM).exists():
        reason = "needs Debian's chromium (apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
