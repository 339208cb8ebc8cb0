"""Fixtures for the browser test: the built book, a local web server, headless Chromium."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from book_check import JUPYTER_BOOK, ROOT
from chromium_cdp import Chromium, find_chromium


def pytest_configure(config):
    config.addinivalue_line("markers", "browser: builds the book and opens every page in headless Chromium")


def build_book(source_dir, *extra_args):
    """``jupyter-book build --all`` with Sphinx warnings as errors; returns the HTML folder.

    ``--all``: an incremental build re-reads only changed pages, so it would not repeat the
    warnings of unchanged ones and -W would pass on a book that has them.
    """
    command = [*JUPYTER_BOOK, "build", str(source_dir), "--all", "--warningiserror", "--keep-going", *extra_args]
    done = subprocess.run(command, check=False, capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-60:])
        pytest.fail(f"the book does not build without warnings:\n{tail}", pytrace=False)
    return Path(source_dir) / "_build" / "html"


@pytest.fixture(scope="session")
def chromium_path():
    path = find_chromium()
    if path is None:
        if os.environ.get("DPSTACK_SKIP_BROWSER") == "1":
            pytest.skip("no Chromium and DPSTACK_SKIP_BROWSER=1")
        pytest.fail(
            "the browser test needs Chromium: `apt-get install -y chromium` (Debian/Ubuntu), "
            "or set CHROMIUM=/path/to/chrome",
            pytrace=False,
        )
    return path


@pytest.fixture(scope="session")
def browser(chromium_path, tmp_path_factory):
    profile = tmp_path_factory.mktemp("chromium-profile")
    with Chromium(chromium_path, profile, width=1400, log_path=profile.parent / "chromium.log") as chromium:
        yield chromium


@pytest.fixture(scope="session")
def book_html():
    """The repository's book, built from the committed notebook outputs into _build/html.

    DPSTACK_BOOK_HTML=path checks an existing build instead (e.g. right after `make html`).
    """
    if os.environ.get("DPSTACK_BOOK_HTML"):
        return Path(os.environ["DPSTACK_BOOK_HTML"])
    return build_book(ROOT)
