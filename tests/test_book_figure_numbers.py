"""The book has no automatic "Fig. n" counter (book/_ext/figure_numbers.py), although Jupyter Book's LaTeX helper turns it on."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))

sphinx_app = pytest.importorskip("sphinx.application")
pytest.importorskip("sphinx_jupyterbook_latex")

PAGE = """Page
====

.. figure:: diagram.png

   **Figure PPTL-1 (redrawn): the problem.** A caption.
"""


def build(tmp_path, extensions):
    src = tmp_path / "src"
    src.mkdir(parents=True)
    (src / "index.rst").write_text(PAGE, encoding="utf-8")
    (src / "diagram.png").write_bytes(b"")
    (src / "conf.py").write_text(f"extensions = {extensions!r}\nnumfig = False\n", encoding="utf-8")
    out = tmp_path / "html"
    app = sphinx_app.Sphinx(str(src), str(src), str(out), str(tmp_path / "doctrees"), "html", status=None, warning=None)
    app.build()
    return (out / "index.html").read_text(encoding="utf-8")


def test_the_latex_helper_alone_numbers_figures_and_the_hook_removes_the_number(tmp_path):
    with_helper = build(tmp_path / "a", ["sphinx_jupyterbook_latex"])
    assert "Fig. 1" in with_helper  # the behaviour the hook exists for
    book = build(tmp_path / "b", ["sphinx_jupyterbook_latex", "figure_numbers"])
    assert "Fig. 1" not in book and "caption-number" not in book
    assert "Figure PPTL-1 (redrawn)" in book
