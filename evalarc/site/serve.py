"""``evalarc site serve``: build a site into a temporary folder, serve it on 127.0.0.1 only, and
rebuild when the report folders or docs change.

- Edits are debounced by watchfiles (a burst of writes gives one rebuild).
- Each rebuild goes into a new temporary folder; only a successful build replaces the one being
  served, so a broken input keeps the last good build online and prints one line saying why.
- The HTTP server binds to 127.0.0.1 (never another interface), answers only GET/HEAD for files
  of the current build, refuses a Host header other than ``127.0.0.1:PORT``/``localhost:PORT``
  with 421 (DNS rebinding), lists no directories and sends ``nosniff``, ``no-referrer``,
  ``no-store`` and ``DENY`` framing headers.
- Every response carries a Content-Security-Policy: an EvalArc page gets the policy its own
  ``<meta>`` declares, anything else ``default-src 'none'; sandbox``. The Content-Type comes from
  :data:`CONTENT_TYPES` (pages as HTML, evidence as JSON, plain text or bytes); a file of any
  other type, an HTML file that is not one of EvalArc's pages, is not served.
- A malformed request (``GET /%00``, a bad percent-encoding, ``..``) gets a plain-text 400 and
  the server keeps serving.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import stat
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import unescape as html_unescape
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote, urlsplit

from evalarc.bundle import HELD_SUFFIXES, PAGE_SUFFIX
from evalarc.cancel import Cancelled
from evalarc.errors import EvalArcError, OutputError
from evalarc.pages.case_views import CHUNK_DIR
from evalarc.resources import bundled_dir
from evalarc.site.build import DOCS_DIR, PAGE_FILE, REPORTS_DIR, SiteOptions, build_site
from evalarc.terminal import has_unsafe_characters

HOST = "127.0.0.1"
DEFAULT_PORT = 8000
DEFAULT_DEBOUNCE_MS = 400
WATCH_TIMEOUT_MS = 500
"""How long the watcher waits before reporting "no change" (its first report means it is live)."""

LineSink = Callable[[str], None]


@dataclass
class _Builds:
    """The build being served and how to make the next one."""

    inputs: list[Path]
    docs_dir: Path | None
    options: SiteOptions
    on_line: LineSink
    workspace: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="evalarc-site-")))
    current: Path | None = None
    generation: int = 0
    last_error: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def rebuild(self) -> bool:
        """Build the next site; serve it only if the build succeeded."""
        target = self.workspace / f"build-{self.generation + 1}"
        try:
            built = build_site(self.inputs, target, options=self.options, docs_dir=self.docs_dir)
        except EvalArcError as error:
            self.last_error = error.message
            kept = "; still serving the last good build" if self.current else ""
            self.on_line(f"evalarc: rebuild failed: {error.message}{kept}")
            return False
        with self.lock:
            previous, self.current = self.current, target
            self.generation += 1
            self.last_error = None
        if previous is not None:
            shutil.rmtree(previous, ignore_errors=True)
        self.on_line(
            f"Built {len(built.reports)} report(s), {len(built.docs)} doc(s) "
            f"(build {self.generation})"
        )
        return True

    def served(self) -> Path | None:
        with self.lock:
            return self.current

    def close(self) -> None:
        shutil.rmtree(self.workspace, ignore_errors=True)


def _interrupt(signum: int, frame: object) -> None:
    raise Cancelled(signum)  # never a bare KeyboardInterrupt: see evalarc.cancel.Cancelled


def _snapshot(paths: Sequence[Path]) -> frozenset[tuple[str, int, int]]:
    """Every file under ``paths`` with its modification time and size."""
    found: set[tuple[str, int, int]] = set()
    for root in paths:
        for folder, _dirs, files in os.walk(root):
            for name in files:
                path = os.path.join(folder, name)
                try:
                    info = os.lstat(path)
                except OSError:
                    continue
                found.add((path, info.st_mtime_ns, info.st_size))
    return frozenset(found)


CONTENT_TYPES: dict[str, str] = {PAGE_SUFFIX: "text/html; charset=utf-8", **HELD_SUFFIXES}
"""The only types ``site serve`` sends, by file suffix: EvalArc's pages as HTML, and the
allow-list a report folder or site may hold (:data:`evalarc.bundle.HELD_SUFFIXES`: JSON as JSON,
every other evidence file as plain text or bytes, never a type a browser runs). A file of any
other suffix is not served."""
SANDBOX_POLICY = "default-src 'none'; sandbox"
"""The Content-Security-Policy of everything that is not one of EvalArc's pages: no script, no
same-origin access, nothing loaded."""
_PAGE_POLICY = re.compile(rb'<meta http-equiv="Content-Security-Policy" content="([^"]{1,4096})">')


def is_site_page(relative: str) -> bool:
    """Whether ``relative`` (a path inside a built site) is one of EvalArc's pages."""
    parts = relative.split("/")
    if relative == PAGE_FILE:
        return True
    if len(parts) == 3 and parts[0] == REPORTS_DIR and parts[2] == PAGE_FILE:
        return True
    return len(parts) == 2 and parts[0] == DOCS_DIR and parts[1].endswith(".html")


def is_evidence_chunk(relative: str) -> bool:
    """Whether ``relative`` is an evidence chunk a report page renders beside itself."""
    parts = relative.split("/")
    return (
        len(parts) == 4
        and parts[0] == REPORTS_DIR
        and parts[2] == CHUNK_DIR
        and parts[3].endswith(".js")
    )


def page_policy(html: bytes) -> str | None:
    """The Content-Security-Policy a page declares in its own ``<meta>`` (entities undone)."""
    match = _PAGE_POLICY.search(html[:16384])
    if match is None:
        return None
    return html_unescape(match.group(1).decode("utf-8", errors="replace"))


def request_path(target: str) -> str | None:
    """The site-relative path a request target names, or None when it is malformed (a NUL or
    other control character, a backslash, ``..``, bad percent-encoding, not starting ``/``)."""
    if not target.startswith("/") or len(target) > 2048:
        return None
    path = urlsplit(target).path
    try:
        decoded = unquote(path, errors="strict")
    except UnicodeDecodeError:
        return None
    if has_unsafe_characters(decoded) or "\\" in decoded:
        return None
    parts = [part for part in decoded.split("/") if part]
    if any(part in (".", "..") for part in parts):
        return None
    relative = "/".join(parts)
    return relative + "/" if decoded.endswith("/") and relative else relative


class _Handler(BaseHTTPRequestHandler):
    """Static files of the current build, with EvalArc's headers; nothing else."""

    server: _SiteHTTPServer
    server_version = "EvalArc"
    sys_version = ""
    error_content_type = "text/plain; charset=utf-8"
    error_message_format = "%(code)d %(message)s\n"

    def _host_allowed(self) -> bool:
        port = self.server.server_address[1]
        return self.headers.get("Host", "") in (f"{HOST}:{port}", f"localhost:{port}")

    def do_GET(self) -> None:
        self._respond(body=True)

    def do_HEAD(self) -> None:
        self._respond(body=False)

    def _respond(self, *, body: bool) -> None:
        if not self._host_allowed():
            self.send_error(HTTPStatus.MISDIRECTED_REQUEST, "Unknown host")
            return
        relative = request_path(self.path)
        if relative is None:
            self.send_error(HTTPStatus.BAD_REQUEST, "Bad request")
            return
        root = self.server.builds.served()
        if root is None:
            self.send_error(HTTPStatus.SERVICE_UNAVAILABLE, "No build yet")
            return
        if relative == "" or relative.endswith("/"):
            relative += PAGE_FILE
        target = root.joinpath(*relative.split("/"))
        try:
            info = os.lstat(target)
        except (OSError, ValueError):
            self.send_error(HTTPStatus.NOT_FOUND, "Not found")
            return
        if stat.S_ISDIR(info.st_mode) and (target / PAGE_FILE).is_file():
            self.send_response(HTTPStatus.MOVED_PERMANENTLY)
            self.send_header("Location", "/" + relative + "/")
            self.send_header("Content-Length", "0")
            self._security_headers(SANDBOX_POLICY)
            self.end_headers()
            return
        suffix = PurePosixPath(relative.lower()).suffix
        content_type = CONTENT_TYPES.get(suffix)
        if not stat.S_ISREG(info.st_mode) or content_type is None:
            self.send_error(HTTPStatus.NOT_FOUND, "Not found")
            return
        try:
            data = target.read_bytes()
        except OSError:
            self.send_error(HTTPStatus.NOT_FOUND, "Not found")
            return
        policy = SANDBOX_POLICY
        if is_evidence_chunk(relative):
            # A page's evidence chunk, loaded by that page as a script (its policy allows it by
            # hash): served as JavaScript, unlike every other .js file (candidate sources).
            content_type = "text/javascript; charset=utf-8"
        if suffix == ".html":
            declared = page_policy(data) if is_site_page(relative) else None
            if declared is None:
                self.send_error(HTTPStatus.NOT_FOUND, "Not found")
                return
            policy = declared
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self._security_headers(policy)
        self.end_headers()
        if body:
            self.wfile.write(data)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        # Every refusal is plain text (error_content_type) under the sandbox policy, never HTML.
        super().send_error(code, message, None)

    def _security_headers(self, policy: str) -> None:
        self.send_header("Content-Security-Policy", policy)
        self._sent_policy = True

    def end_headers(self) -> None:
        if not getattr(self, "_sent_policy", False):
            self.send_header("Content-Security-Policy", SANDBOX_POLICY)
        self._sent_policy = False
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("Cross-Origin-Opener-Policy", "same-origin")
        self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        super().end_headers()

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        except (ConnectionError, TimeoutError):
            self.close_connection = True
        except Exception:  # a malformed request must never take the server down
            self.close_connection = True
            with contextlib.suppress(Exception):
                self.send_error(HTTPStatus.BAD_REQUEST, "Bad request")

    def log_message(self, format: str, *args: Any) -> None:
        return  # quiet: the terminal shows builds, not every request


class _SiteHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        return  # a broken connection is the client's business; the server keeps serving

    def __init__(self, port: int, builds: _Builds, empty: Path) -> None:
        self.builds = builds
        self.empty = empty
        super().__init__((HOST, port), _Handler)


class SiteServer:
    """A running ``site serve``: call :meth:`start`, then :meth:`serve_forever` or :meth:`stop`."""

    def __init__(
        self,
        inputs: Sequence[Path],
        *,
        port: int = DEFAULT_PORT,
        docs_dir: Path | None = None,
        options: SiteOptions | None = None,
        debounce_ms: int = DEFAULT_DEBOUNCE_MS,
        on_line: LineSink = print,
    ) -> None:
        self.builds = _Builds(list(inputs), docs_dir, options or SiteOptions(), on_line)
        self.port = port
        self.debounce_ms = debounce_ms
        self.on_line = on_line
        self._stop = threading.Event()
        self._http: _SiteHTTPServer | None = None
        self._serving = False
        self._built_from: frozenset[tuple[str, int, int]] = frozenset()
        self.watching = threading.Event()
        """Set once file watching is live (edits from then on trigger a rebuild)."""
        self._threads: list[threading.Thread] = []

    @property
    def url(self) -> str:
        if self._http is None:
            raise OutputError("the server is not running")
        return f"http://{HOST}:{self._http.server_address[1]}/"

    def start(self) -> str:
        """Build once (an error here is fatal: there is nothing to serve), bind, watch."""
        try:
            self._built_from = _snapshot(self._watched())
            if not self.builds.rebuild():
                raise OutputError(f"cannot serve: {self.builds.last_error}")
            empty = self.builds.workspace / "empty"
            empty.mkdir()
            try:
                self._http = _SiteHTTPServer(self.port, self.builds, empty)
            except OSError as error:
                raise OutputError(
                    f"cannot listen on {HOST}:{self.port}: {error.strerror or error}"
                ) from None
        except BaseException:
            self.builds.close()
            raise
        watcher = threading.Thread(target=self._watch, name="evalarc-site-watch", daemon=True)
        watcher.start()
        self._threads.append(watcher)
        return self.url

    def _watched(self) -> list[Path]:
        paths = [*self.builds.inputs]
        if self.builds.docs_dir is not None:
            paths.append(self.builds.docs_dir)
        # Editing the templates or assets of a checkout rebuilds too.
        paths += [bundled_dir("site_templates"), bundled_dir("assets")]
        return [path for path in paths if path.exists()]

    def _watch(self) -> None:
        import watchfiles

        watched = self._watched()
        for changes in watchfiles.watch(
            *watched,
            debounce=self.debounce_ms,
            stop_event=self._stop,
            raise_interrupt=False,
            yield_on_timeout=True,
            rust_timeout=WATCH_TIMEOUT_MS,
        ):
            if self._stop.is_set():
                break
            if not self.watching.is_set():
                # The first yield means the watcher is live; an edit made between the first
                # build and now was not seen by it, so compare the trees instead.
                if changes or _snapshot(watched) != self._built_from:
                    self.builds.rebuild()
                self.watching.set()
            elif changes:
                self.builds.rebuild()

    def serve_in_background(self) -> None:
        assert self._http is not None
        self._serving = True
        thread = threading.Thread(
            target=self._http.serve_forever, name="evalarc-site-http", daemon=True
        )
        thread.start()
        self._threads.append(thread)

    def serve_forever(self) -> None:
        """Serve until Ctrl-C or SIGTERM (both end as KeyboardInterrupt), then clean up."""
        assert self._http is not None
        self._serving = True
        previous = None
        if threading.current_thread() is threading.main_thread():
            previous = signal.signal(signal.SIGTERM, _interrupt)
        try:
            self._http.serve_forever()
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
            self.stop()

    def stop(self) -> None:
        self._stop.set()
        if self._http is not None:
            if self._serving:
                self._http.shutdown()  # returns at once if serve_forever already ended
            self._http.server_close()
            self._http = None
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout=5)
        self.builds.close()

    @property
    def generation(self) -> int:
        return self.builds.generation

    @property
    def last_error(self) -> str | None:
        return self.builds.last_error
