"""Sphinx extension: make the book readable offline.

* MathJax 3 is served from a local copy (the ``django-static-mathjax`` wheel
  ships MathJax 3.2.2; it has no Django dependency) copied into
  ``_static/mathjax`` at the end of the build, instead of the CDN default of
  ``sphinx.ext.mathjax``.
* sphinx-thebe's scripts are dropped: the book has no live-code button (thebe
  would load from a CDN), and Jupyter Book 1.0 adds its inline configuration
  twice, a ``const`` redeclared, which is a JavaScript error on every page.
  Other scripts added twice are kept once.
* MathJax is loaded on every page, since the navigation shows titles with math.
* Any script or stylesheet that a theme or extension adds from another host
  is reported as a warning, so ``jupyter-book build -W`` fails on it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sphinx.errors import ExtensionError
from sphinx.util import logging

logger = logging.getLogger(__name__)

# The bundle the pages load, plus the folders it loads lazily: TeX extensions
# (autoload, e.g. \boldsymbol), the CHTML fonts, and the menu's accessibility tools.
ENTRY = "tex-chtml.js"
LAZY_FOLDERS = ("input", "output", "ui", "a11y", "sre", "adaptors")
TARGET = "mathjax"  # inside _static


def local_mathjax_root() -> Path:
    """The ``es5`` folder of the installed MathJax 3 distribution."""
    try:
        import mathjax  # the import name of django-static-mathjax
    except ImportError as exc:
        raise ExtensionError(
            "offline MathJax not found: install it with `pip install django-static-mathjax` "
            "(`make install` does this through the book extra)"
        ) from exc
    root = Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"
    if not (root / ENTRY).is_file():
        raise ExtensionError(f"offline MathJax is incomplete: {root / ENTRY} is missing")
    return root


def use_local_mathjax(app, config):
    local_mathjax_root()  # fail early, before any page is written
    config.mathjax_path = f"{TARGET}/{ENTRY}"


def copy_mathjax(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    root = local_mathjax_root()
    target = Path(app.outdir) / "_static" / TARGET
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy2(root / ENTRY, target / ENTRY)
    for folder in LAZY_FOLDERS:
        if (root / folder).is_dir():
            shutil.copytree(root / folder, target / folder, dirs_exist_ok=True)


def is_remote(url: str) -> bool:
    return url.startswith(("http://", "https://", "//"))


def tidy_assets(app, pagename, templatename, context, doctree):
    """Drop thebe and duplicated assets; warn about any remote one."""
    for kind in ("script_files", "css_files"):
        assets = context.get(kind)
        if not assets:
            continue
        kept, seen = [], set()
        for asset in assets:
            url = str(getattr(asset, "filename", None) or "")
            body = (getattr(asset, "attributes", None) or {}).get("body", "")
            if "thebe" in url or "THEBE_JS_URL" in body or (url, body) in seen:
                continue
            seen.add((url, body))
            kept.append(asset)
            if is_remote(url) or "://" in body:
                logger.warning(
                    "%s: remote %s %s breaks offline reading",
                    pagename,
                    kind.split("_")[0],
                    url or body[:80],
                    location=pagename,
                )
        assets[:] = kept  # in place: the builder's own list, reset for every page


def setup(app):
    # MathJax on every page, not only on pages with math of their own: the sidebar shows
    # every page's title, and a title with math would otherwise stay raw TeX elsewhere.
    app.set_html_assets_policy("always")
    app.connect("config-inited", use_local_mathjax, priority=900)
    app.connect("html-page-context", tidy_assets, priority=900)  # after the others add theirs
    app.connect("build-finished", copy_mathjax)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
