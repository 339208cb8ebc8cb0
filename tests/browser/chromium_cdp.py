"""A small client for headless Chromium over the DevTools protocol, with the standard library only.

Chromium started with ``--remote-debugging-pipe`` reads protocol messages from file
descriptor 3 and writes its answers and events to descriptor 4, each message a JSON text
followed by a NUL byte. That needs neither chromedriver nor a websocket library.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import threading
import time

# Names the Debian, Ubuntu and upstream packages install the browser under.
BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
# A fresh, quiet, offline browser: no first-run pages, no update or sync traffic, and every
# host name other than 127.0.0.1 unresolvable, so a page cannot silently load a remote asset.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--mute-audio",
    "--hide-scrollbars",
    "--disable-dev-shm-usage",  # containers often give /dev/shm only 64 MB
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
)


class ProtocolError(RuntimeError):
    """Chromium answered a command with an error, or did not answer in time."""


def find_chromium():
    """Path of the browser: ``$CHROMIUM`` if set, else the first known name on the PATH."""
    if os.environ.get("CHROMIUM"):
        return os.environ["CHROMIUM"]
    for name in BROWSER_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


class Chromium:
    """One headless Chromium process and one page (tab) in it.

    Events are kept in ``self.events`` in arrival order; :meth:`mark` and
    :meth:`events_since` let a caller look only at the events of one navigation.
    """

    def __init__(self, binary, user_data_dir, width=1280, height=900, log_path=os.devnull):
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def use_pipe_as_fd_3_and_4():  # runs in the child between fork and exec
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        self._log = open(log_path, "wb")
        self.process = subprocess.Popen(
            [
                binary,
                *FLAGS,
                f"--user-data-dir={user_data_dir}",
                f"--window-size={width},{height}",
                "--remote-debugging-pipe",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=self._log,
            pass_fds=(3, 4),
            preexec_fn=use_pipe_as_fd_3_and_4,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.width, self.height = width, height
        self.events = []
        self._answers = {}
        self._next_id = 0
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._read_messages, daemon=True)
        self._reader.start()
        self.session = self._open_page()

    # -- transport -------------------------------------------------------------------------
    def _read_messages(self):
        buffer = b""
        while True:
            try:
                chunk = os.read(self._from_browser, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                with self._cond:
                    self._answers[None] = "browser closed the pipe"
                    self._cond.notify_all()
                return
            buffer += chunk
            *messages, buffer = buffer.split(b"\0")
            with self._cond:
                for raw in messages:
                    message = json.loads(raw)
                    if "id" in message:
                        self._answers[message["id"]] = message
                    else:
                        self.events.append(message)
                self._cond.notify_all()

    def send(self, method, params=None, session=None, timeout=60):
        """Send one command and wait for its result (a dict)."""
        with self._cond:
            self._next_id += 1
            ident = self._next_id
        message = {"id": ident, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        with self._cond:
            while ident not in self._answers:
                if None in self._answers:
                    raise ProtocolError(f"{method}: {self._answers[None]}")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise ProtocolError(f"{method}: no answer in {timeout} s")
                self._cond.wait(remaining)
            answer = self._answers.pop(ident)
        if "error" in answer:
            raise ProtocolError(f"{method}: {answer['error'].get('message')}")
        return answer.get("result", {})

    def page(self, method, params=None, timeout=60):
        """A command to the page's session."""
        return self.send(method, params, session=self.session, timeout=timeout)

    # -- page ------------------------------------------------------------------------------
    def _open_page(self):
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable", session=session)
        return session

    def mark(self):
        """A position in the event list, for :meth:`events_since`."""
        with self._cond:
            return len(self.events)

    def events_since(self, mark, method=None):
        with self._cond:
            found = self.events[mark:]
        return [e for e in found if e.get("sessionId") == self.session and (method is None or e["method"] == method)]

    def wait_for_event(self, method, since, timeout=60):
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for event in self.events[since:]:
                    if event["method"] == method and event.get("sessionId") == self.session:
                        return event
                remaining = deadline - time.monotonic()
                if remaining <= 0 or None in self._answers:
                    return None
                self._cond.wait(remaining)

    def navigate(self, url, timeout=60):
        """Load ``url``; returns an error text, or None once the load event has fired."""
        since = self.mark()
        result = self.page("Page.navigate", {"url": url}, timeout=timeout)
        if result.get("errorText"):
            return result["errorText"]
        if self.wait_for_event("Page.loadEventFired", since, timeout) is None:
            return f"no load event within {timeout} s"
        return None

    def evaluate(self, expression, timeout=60):
        """Value of a JavaScript expression (promises are awaited), as JSON-able data."""
        result = self.page(
            "Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True}, timeout=timeout
        )
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise ProtocolError(f"evaluate: {text}")
        return result["result"].get("value")

    def set_width(self, width, settle_ms=500):
        """Lay the page out in a window ``width`` CSS pixels wide (media queries follow)."""
        self.page(
            "Emulation.setDeviceMetricsOverride",
            {"width": int(width), "height": self.height, "deviceScaleFactor": 1, "mobile": False},
        )
        self.width = int(width)
        # Two animation frames (the new layout is computed and painted), then the theme's
        # transitions (the sidebar sliding away) end: a screenshot earlier catches them midway.
        self.evaluate(
            "new Promise(done => requestAnimationFrame(() => requestAnimationFrame("
            "() => setTimeout(done, settle_ms))))".replace("settle_ms", str(int(settle_ms)))
        )

    def screenshot(self, path, max_height=20000):
        """Write a PNG of the whole page (up to ``max_height`` CSS pixels tall).

        The window is made as tall as the page for the capture, then put back: capturing
        "beyond the viewport" instead shifts parts of the page sideways in the image.
        """
        size = self.page("Page.getLayoutMetrics")["cssContentSize"]
        height = min(max(int(size["height"]), self.height), max_height)
        metrics = {"width": self.width, "deviceScaleFactor": 1, "mobile": False}
        self.page("Emulation.setDeviceMetricsOverride", {**metrics, "height": height})
        try:
            self.evaluate("new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
            data = self.page("Page.captureScreenshot", {"format": "png"})["data"]
        finally:
            self.page("Emulation.setDeviceMetricsOverride", {**metrics, "height": self.height})
        with open(path, "wb") as fh:
            fh.write(base64.b64decode(data))

    def close(self):
        try:
            self.send("Browser.close", timeout=10)
        except ProtocolError:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._to_browser)
        self._reader.join(timeout=10)
        os.close(self._from_browser)
        self._log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
