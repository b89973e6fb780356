"""Fixtures shared by test modules: one headless Chromium for the whole session (browser.py), and
the course site as ``make course`` builds it, served on 127.0.0.1 (test_site*.py)."""

import fcntl
import functools
import os
import subprocess
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from browser import ARGS, CHROMIUM

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "build" / "course"

# make test hands whole files to its workers (--dist loadfile), in collection order
# (--no-loadscope-reorder).  The files that take minutes go first, longest first, so that no worker
# starts one while the other has nothing left; the rest follow in name order.  Per-file seconds
# measured in a quiet clean clone's make test on 2 cores, in this order: 284, 157, 155, 151, 147 (the next
# longest, test_fuzz_cli.py, took 82).
FIRST = ("test_kernel_lab.py", "test_lab_qemu.py", "test_site_animations.py", "test_site.py", "test_symmetry.py")


def pytest_collection_modifyitems(items):
    first = {name: k for k, name in enumerate(FIRST)}
    items.sort(key=lambda item: first.get(item.path.name, len(FIRST)))  # stable: name order otherwise


@pytest.fixture(scope="session")
def browser():
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: run scripts/setup-system (Debian package chromium-headless-shell)")
    from playwright.sync_api import sync_playwright

    # Playwright gives the browser a fresh temporary profile itself.
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield browser
        browser.close()


# The one check that fails when the unpacked tree is not the pinned release.
STALE_PIN_CHECK = "test_source_index.py::test_the_unpacked_tree_is_the_pinned_release"


@pytest.fixture(scope="session")
def linux_tree() -> Path:
    """Debian's linux-source-6.12 tree, unpacked by ``make linux-source`` (which ``make test`` runs
    first).  When the archive no longer has the pinned release, the release-exact checks that use it
    are skipped, naming the reason, and one check fails on it (STALE_PIN_CHECK), rather than a
    cascade of mismatches."""
    from kstep.source import index as source_index

    tree = source_index.linux_tree()
    assert tree is not None, "no linux-source-6.12 tree in the user cache: run make linux-source"
    stale = source_index.stale_pin(tree)
    if stale:
        pytest.skip(f"{stale}: release-exact, so left to {STALE_PIN_CHECK}")
    return tree



@pytest.fixture(scope="session")
def site() -> Path:
    """The site as ``make course`` builds it, by the same command (Sphinx keeps to its own process).

    ``make test`` builds it before the workers start and notes its run's id (xdist's --testrunuid,
    the same in every worker) beside the site, so here it is only found.  Run otherwise, workers take
    turns (a file lock): the first builds (from warm caches 18 s under load: Sphinx reads its
    environment and checks every page) and notes the run's id, and the others find the note."""
    (ROOT / "build").mkdir(exist_ok=True)
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    built_for = ROOT / "build" / "course.built-for"
    with open(ROOT / "build" / "course.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if run_id is not None and built_for.is_file() and built_for.read_text() == run_id:
            return SITE
        built_for.unlink(missing_ok=True)  # a failed build below leaves no note
        run = subprocess.run([sys.executable, "-m", "kstep.views.course", "--docs", str(ROOT / "docs"),
                              "--out", str(SITE)], capture_output=True, text=True)
        assert run.returncode == 0, f"make course failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
        assert f"course: open {(SITE / 'index.html').as_uri()}" in run.stdout
        if run_id is not None:
            built_for.write_text(run_id)
    return SITE


@pytest.fixture(scope="session")
def origin(site):
    """The built site served on 127.0.0.1, quietly, on a free port."""
    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def end_headers(self):
            # The site does not change while it is served: a page's BokehJS, theme and fonts come from the
            # browser's cache on every later page, not asked for again (a request and a 304 each).
            self.send_header("Cache-Control", "max-age=3600")
            super().end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()
