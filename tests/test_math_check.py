"""The browser test's math checks, on planted text and measurements (no browser needed).

The same functions judge what the probes return on every built page (``tests/browser``).
"""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "browser"))
import math_check

CAUGHT = {
    "feature importance v_i = \\alpha^i": "raw TeX in the text",  # a page title in a link
    "the excess risk falls as M^{-2}\\epsilon^{-2}": "raw TeX in the text",
    "left as $\\alpha_1 + \\beta^2$ by a renderer": "raw TeX in the text",
    "ratio r^(k) = log(d/(Kδ)) / (q_k K log(d/δ))": "math typed as plain text",
    "ε_s-DP for the source and ε_t-DP for the target": "math typed as plain text",
    "falls as M^-2": "math typed as plain text",
}
NOT_CAUGHT = [
    "n_jobs = 2 and the result pst_fig1_epsilon",  # snake_case names are not math
    "PST-F(W) beats PST-S at ε = 0.5; λₖ = λ(Kqₖ)²",  # Unicode subscripts are typeset text
    "10⁻⁴ ≤ λ ≤ 1; the price is $5",
    "see https://example.org/a_b/c_d.html",
]


@pytest.mark.parametrize("text, name", sorted(CAUGHT.items()))
def test_each_kind_of_unreadable_math_is_caught(text, name):
    problems = math_check.text_problems([text])
    assert problems and all(p.startswith(name) for p in problems[:1]), problems


@pytest.mark.parametrize("text", NOT_CAUGHT)
def test_ordinary_text_is_not_flagged(text):
    assert math_check.text_problems([text]) == []


def test_a_wide_equation_is_reported_with_its_width():
    found = [{"text": "log p(w|D)/p(w|D')", "width": 1210, "column": 848}]
    assert math_check.equation_problems(found, 1400) == [
        'display equation cut at 1400 px (1210 px wide in a 848 px column): "log p(w|D)/p(w|D\')"'
    ]
    assert math_check.equation_problems([], 400) == []
