"""Sphinx extension: no automatic "Fig. n" counter in the book.

The book's own counter runs across pages and collides with the papers' numbers ("Fig. 3 MPL
Figure 1, redrawn"); captions carry the names the book gives figures instead ("Figure MPL-1
(redrawn)"). ``numfig: false`` in the configuration is not enough: Jupyter Book's LaTeX helper
extension turns ``numfig`` on for every builder when the configuration is read, so this hook,
which runs after it, turns it off again.
"""

from __future__ import annotations


def no_figure_numbers(app, config):
    config.numfig = False


def setup(app):
    app.connect("config-inited", no_figure_numbers, priority=900)  # after sphinx_jupyterbook_latex (500)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
