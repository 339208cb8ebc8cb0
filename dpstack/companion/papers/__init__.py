"""The three papers, one folder each: its claims, its grids and its page helpers.

Each folder (:mod:`~dpstack.companion.papers.pst`, :mod:`~dpstack.companion.papers.pptl`,
:mod:`~dpstack.companion.papers.mpl`) holds ``claims.py`` (the paper's claims, judged by the one
rule), ``grids.py`` (the only computing module of the paper: its cells and cell functions) and
``pages.py`` (the paper's page helpers: tables, figures, sentences). What the PST and PPTL grids
share sits beside them: :mod:`~dpstack.companion.papers.open_choices` (the open choices and
the equal tuning budget, computing) and :mod:`~dpstack.companion.papers.stacked_pages` (their
pages' shared helpers, presentation).
"""
