"""PST's page helpers (Yao et al. 2019, §4.1): what the PST figure pages show beside their verdicts.

Figure numbers are the arXiv version's, the IJCAI 2019 number in brackets
(:mod:`dpstack.companion.numbering`). The claims themselves are in
:mod:`dpstack.companion.papers.pst.claims`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["alpha_label"]


def alpha_label(row):
    """ "W(α=0.5)" for PST-F(W) rows with an α, else the method name."""
    a = row.get("alpha")
    return f"W(α={a:g})" if row["method"] == "PST-F(W)" and a is not None and np.isfinite(a) else row["method"]
