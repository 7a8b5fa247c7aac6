"""The built site served the way a reader's server would, for the browser tests: a threaded
http.server on 127.0.0.1 with the site under /sub/ only, so an absolute path in a page fails."""

from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run", "--disable-sync"]
SUB = "/sub/"


class SubPathHandler(http.server.SimpleHTTPRequestHandler):
    """The site under /sub/ only, so an absolute path in the page fails; 404s are recorded."""

    extensions_map = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".wasm": "application/wasm",
        ".mjs": "text/javascript",
        ".js": "text/javascript",
        ".json": "application/json",
        ".py": "text/x-python",
    }
    missing: list[str] = []

    def translate_path(self, path: str) -> str:
        if not path.startswith(SUB):
            return str(Path(self.directory) / "__outside_the_sub_path__")
        return super().translate_path("/" + path[len(SUB) :])

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        if code == 404:
            self.missing.append(self.path)
        super().send_error(code, message, explain)

    def log_message(self, format: str, *args: object) -> None:
        pass


def serve(directory: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    handler = functools.partial(SubPathHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}{SUB}"
