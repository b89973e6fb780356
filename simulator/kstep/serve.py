"""``kstep serve``: a built site over HTTP on 127.0.0.1, where the pages' interactive mode works.

Pyodide cannot start from file:// (a browser fetches neither its WebAssembly nor its modules from
there), so a course site opened as files plays its recorded runs only; served, a student schedules
the threads by hand.  The server answers on the loopback address only and serves the folder's files
as they are, with the types WebAssembly and ES modules need, and lets the browser cache them as long
as they have not changed (its Last-Modified and If-Modified-Since), so that Pyodide, loaded on one
page, loads from the browser's cache on the next.
"""

from __future__ import annotations

import functools
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable

from .errors import UserError

HOST = "127.0.0.1"
TYPES = {".wasm": "application/wasm", ".mjs": "text/javascript", ".js": "text/javascript",
         ".json": "application/json", ".zip": "application/zip"}


class Handler(SimpleHTTPRequestHandler):
    extensions_map = {**SimpleHTTPRequestHandler.extensions_map, **TYPES}

    def end_headers(self):
        # The browser keeps every file (the 13 MB of Pyodide above all) for the site's other pages, and asks
        # each time whether it changed: a rebuilt site is never shown stale, an unchanged file costs a 304.
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()

    def log_message(self, format, *args):  # one line per request would bury the address printed at start
        pass


def server(directory: str | Path, port: int) -> ThreadingHTTPServer:
    """A server of ``directory`` on HOST:``port`` (0: any free port), not yet serving."""
    root = Path(directory)
    if not root.is_dir():
        raise UserError(f"{directory}: not a directory (give the folder of a built site, e.g. build/course)")
    try:
        return ThreadingHTTPServer((HOST, port), functools.partial(Handler, directory=str(root)))
    except OSError as e:
        raise UserError(f"cannot serve on {HOST}:{port}: {e.strerror or e}") from None


def serve(directory: str | Path, port: int, say: Callable[[str], None] = print) -> None:
    """Serve until interrupted; ``say`` gets the address to open, once the server listens."""
    with server(directory, port) as httpd:
        host, bound = httpd.server_address[:2]
        say(f"serving {directory} at http://{host}:{bound}/ (Ctrl-C stops)")
        httpd.serve_forever()
