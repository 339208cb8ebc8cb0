"""Mark in the book's sidebar the pages whose data is absent.

A page generated without its data (``scripts/run_notebooks.py`` records
``{"dpstack": {"data_absent": true}}`` in the notebook's metadata) keeps its place in the table
of contents, so links still work, but its sidebar entry reads "· data absent" on every page:
a reader sees before clicking that the page holds a note, not results. The marks are one
``<style>`` element in each page's head (no file, nothing remote); a page rebuilt with its data
loses the mark.
"""

from __future__ import annotations

import json
from pathlib import Path

MARK = " · data absent"


def absent_pages(srcdir):
    """Names (``notebooks/<name>.ipynb``) of the notebooks whose metadata says their data is absent."""
    found = []
    for path in sorted(Path(srcdir, "notebooks").glob("*.ipynb")):
        try:
            meta = json.loads(path.read_text(encoding="utf-8")).get("metadata", {})
        except (OSError, ValueError):
            continue
        if isinstance(meta.get("dpstack"), dict) and meta["dpstack"].get("data_absent"):
            found.append(path.stem)
    return found


def sidebar_css(pages):
    """CSS that appends :data:`MARK` to the sidebar links of ``pages``."""
    rules = []
    for name in pages:
        rules.append(
            f'.bd-sidebar-primary a[href$="{name}.html"]::after{{content:"{MARK}";'
            "font-size:0.8em;opacity:0.75;white-space:nowrap}"
        )
    return "".join(rules)


def _collect(app):
    app.dpstack_absent_pages = absent_pages(app.srcdir)


def _page_context(app, pagename, templatename, context, doctree):
    css = sidebar_css(getattr(app, "dpstack_absent_pages", []))
    if css:
        context["metatags"] = context.get("metatags", "") + f'\n<style id="dpstack-absent-data">{css}</style>'


def setup(app):
    app.connect("builder-inited", _collect)
    app.connect("html-page-context", _page_context)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
