"""The "Try it" box that ends every experiment and theorem page.

One or two parameter changes worth trying per page, each as a papermill command that re-runs
the page and as the equivalent Python call (and, for a registered experiment, the same run from
a shell): :data:`TRY_IT` holds them, one entry per page; :func:`try_it` renders the box.
"""

from __future__ import annotations

import html
import math
from typing import NamedTuple

from dpstack.companion.run import ALIASES

__all__ = ["Suggestion", "TRY_IT", "try_it_suggestions", "try_it"]


class Suggestion(NamedTuple):
    """One parameter change worth trying on a page.

    ``question`` is what the change asks; ``notebook`` maps the page's papermill parameters to
    their new values (empty when the change is not a parameter of the page); ``python`` is the
    equivalent Python call, and ``command`` (for a registered experiment) the same call from a
    shell.
    """

    question: str
    notebook: dict
    python: str
    command: str = ""


def _py_value(v):
    return "math.inf" if v == math.inf else repr(v)


def _live(page, name, question, notebook=None, **knobs):
    """A suggestion that re-runs the registered experiment ``name`` with ``knobs`` (and the page's ``seed``)."""

    args = dict(knobs)
    notebook = dict(notebook or {})
    if "seed" in notebook:
        args["seed"] = notebook["seed"]
    call = ", ".join(f"{k}={_py_value(v)}" for k, v in args.items())
    python = f"from dpstack.companion import live\n\nrun = live.{name}({call})\nrun.frame  # the tidy table"
    flags = []
    for k, v in args.items():
        flag = "--seed" if k == "seed" else ALIASES.get(k, "--" + k.replace("_", "-"))
        values = v if isinstance(v, (list, tuple)) else [v]
        flags.append(flag + " " + " ".join(str(x) for x in values))
    command = f"python -m dpstack.companion run {name} " + " ".join(flags)
    return Suggestion(question, notebook, python, command)


def _call(question, notebook, python):
    return Suggestion(question, notebook, python)


#: Pages whose data set a reader may not have: their suggestions say first what they need.
DATA_FIRST = {
    "mpl_har": "Once the UCI HAR data set is on your machine (the Datasets chapter says where it comes from): ",
    "mpl_url": "Once the malicious-URL data set (about 0.5 GB) is on your machine (the Datasets chapter says "
    "where it comes from): ",
}


def _try_it():
    """The suggestions of every page."""
    another_draw = "Do the verdicts survive another draw of every data split and every noise vector?"
    mpl_lam = (
        "The released model's sensitivity is 2/(Mλ): with a λ a hundred times the paper's, how much further "
        "to the right (smaller ε) do the private curves hold up, and what does the larger λ cost batch?"
    )
    return {
        "pst_fig1_epsilon": [
            _live("pst_fig1_epsilon", "pst_fig1_epsilon", another_draw, {"seed": 1}),
            _live(
                "pst_fig1_epsilon",
                "pst_fig1_epsilon",
                "Below the paper's smallest ε: does PST-F(W) beat PLR at ε = 0.05?",
                epsilons=[0.05, 0.1],
                n_repeats=5,
                datasets=["MNIST"],
            ),
        ],
        "pst_fig2_groups": [
            _live("pst_fig2_groups", "pst_fig2_groups", another_draw, {"seed": 1}),
            _live(
                "pst_fig2_groups",
                "pst_fig2_groups",
                "With half the budget, does the best number of groups K move?",
                epsilon=0.5,
                k_grid=[1, 2, 5, 10, 20],
                n_repeats=10,
            ),
        ],
        "pst_fig3_importance": [
            _live("pst_fig3_importance", "pst_fig3_importance", another_draw, {"seed": 1}),
            _live(
                "pst_fig3_importance",
                "pst_fig3_importance",
                "Do importances help more when the budget is four times smaller?",
                epsilon=0.25,
                n_repeats=10,
            ),
        ],
        "pst_fig4_combiners": [
            _live("pst_fig4_combiners", "pst_fig4_combiners", another_draw, {"seed": 1}),
            _live(
                "pst_fig4_combiners",
                "pst_fig4_combiners",
                "On MNIST instead of NEWS20, does the stacked model (C-hl) still beat every single block and the votes?",
                dataset="MNIST",
            ),
        ],
        "pptl_table1_mnist": [
            _live("pptl_table1_mnist", "pptl_table1_mnist", another_draw, {"seed": 1}),
            _live(
                "pptl_table1_mnist",
                "pptl_table1_mnist",
                "Below the paper's smallest ε: where does transfer stop paying off against the target alone (Direct)?",
                epsilons=[0.1, 0.25, 0.5],
                n_repeats=5,
            ),
        ],
        "ruijin_transfer": [
            _live("ruijin_transfer", "ruijin_transfer_epsilon", another_draw, {"seed": 1}),
            _live(
                "ruijin_transfer",
                "ruijin_transfer_epsilon",
                "Another target hospital: branch 12, the smallest of the cohort, against ε.",
                branch=12,
            ),
        ],
        **{
            page: [
                _live(page, page, DATA_FIRST.get(page, "") + mpl_lam, {"lam": 0.01}, lam=0.01),
                _live(
                    page,
                    page,
                    DATA_FIRST.get(page, "")
                    + "PCA and the norm scale fitted on the private rows instead of the public auxiliary rows: how much "
                    "accuracy did keeping them inside the guarantee cost?",
                    {"fit_on": "private"},
                    fit_on="private",
                ),
            ]
            for page in ("mpl_har", "mpl_kdd", "mpl_url", "mpl_mnist10")
        },
        "end_to_end_private": [
            _live(
                "end_to_end_private",
                "end_to_end_private",
                "Does the cost of the whole-pipeline guarantee stay the same under another draw of every data "
                "split and every noise vector?",
                {"seed": 1},
            ),
            _live(
                "end_to_end_private",
                "end_to_end_private",
                "Transfer only: what does the whole-pipeline guarantee cost PPTL-FS(W) against Direct, with more repeats?",
                transfer_methods=["PPTL-FS(W)", "Direct"],
                n_repeats=20,
            ),
        ],
        "stacking_ablation": [
            _live(
                "stacking_ablation",
                "stacking_ablation_swing",
                "Does the share of high-level models that fall below AUC 0.5 stay the same under another draw of "
                "every data split and every noise vector?",
                {"seed": 1},
            ),
            _live(
                "stacking_ablation",
                "stacking_ablation_swing",
                "Four times as many noise seeds: how often does the high-level model fall below AUC 0.5?",
                n_seeds=200,
            ),
        ],
        "protocol_sensitivity": [
            _live("protocol_sensitivity", "protocols_pst_fig1_row_scale", another_draw, {"seed": 1}),
            _live(
                "protocol_sensitivity",
                "protocols_pst_fig1_row_scale",
                "A much larger public row scale: how far does dividing the rows by 16 pull every method down?",
                row_scales=[2.0, 16.0],
            ),
        ],
        "pst_privacy": [
            _call(
                "Half the budget: the ledger and the exact privacy loss of each block at ε = 0.5.",
                {"epsilon": 0.5},
                "from dpstack import FeatureSplitLogisticRegression\n"
                "from dpstack.audit import adversarial_case, block_loss_table\n\n"
                "fs = FeatureSplitLogisticRegression(epsilon=0.5, groups=[[0, 1, 2], [3, 4], [5, 6]],\n"
                "                                    importance=[0.5, 0.35, 0.15], lam=[0.05, 0.02, 0.1], classes=[0, 1])\n"
                "block_loss_table(adversarial_case(fs, n_samples=100))",
            ),
            _call(
                "Skewed importances: does the block with q = 0.05 still stay within its share of ε?",
                {"importance": [0.8, 0.15, 0.05]},
                "from dpstack import FeatureSplitLogisticRegression\n"
                "from dpstack.audit import adversarial_case, block_loss_table\n\n"
                "fs = FeatureSplitLogisticRegression(epsilon=1.0, groups=[[0, 1, 2], [3, 4], [5, 6]],\n"
                "                                    importance=[0.8, 0.15, 0.05], lam=[0.05, 0.02, 0.1], classes=[0, 1])\n"
                "block_loss_table(adversarial_case(fs, n_samples=100))",
            ),
        ],
        "pst_sample_complexity": [
            _call(
                "Twice as many groups: how does the ratio r of an equal-importance block change at K = 10? "
                "(The page also re-runs its simulation; the call gives the ratio.)",
                {"K": 10},
                "from dpstack.theory import sample_complexity_ratio\n\n"
                "sample_complexity_ratio(50, 10, 1 / 10, 0.05)  # d = 50 features, K = 10, q = 1/K, δ = 0.05",
            ),
            _call(
                "Four times as many features: does splitting them pay off more at d = 200? "
                "(The page also re-runs its simulation; the call gives the ratio.)",
                {"d": 200},
                "from dpstack.theory import sample_complexity_ratio\n\n"
                "sample_complexity_ratio(200, 5, 1 / 5, 0.05)  # d = 200 features, K = 5, q = 1/K, δ = 0.05",
            ),
        ],
        "pst_guarantees": [
            _call(
                "A much smaller target budget: are both guarantees still stated, and met, at εₜ = 0.1? "
                "(The page also recomputes the exact privacy losses; the call gives the ledger's guarantees.)",
                {"epsilon_target": 0.1},
                "import numpy as np\n\n"
                "from dpstack import PrivateTransferStacking\n"
                "from dpstack.theory import domain_guarantees, make_weighted_features\n\n"
                "beta = np.array([1.0, 0.8, 0.5, 0.2, 0.1, 0.1])\n"
                "Xs, ys = make_weighted_features(300, beta, 0)\n"
                "Xt, yt = make_weighted_features(200, beta, 1)\n"
                "model = PrivateTransferStacking(epsilon_source=1.0, epsilon_target=0.1, n_groups=2,\n"
                "                                feature_importance=beta, lam_source=0.05, lam=0.05,\n"
                "                                random_state=0, classes=[0, 1])\n"
                "domain_guarantees(model.fit(Xt, yt, X_source=Xs, y_source=ys).privacy_)",
            ),
        ],
        "mpl_sensitivity": [
            _call(
                "Many more parties: does the constructed sensitivity of soft shrink as 2/(Mλ) while vote's does not?",
                {"n_parties": 101},
                "from dpstack.multiparty import sensitivity_by_construction\n\n"
                "[sensitivity_by_construction(m, n_parties=101, n_classes=2, lam=1.0, construction='label_flip')\n"
                " for m in ('vote', 'soft')]",
            ),
        ],
        "mpl_lemma2": [
            _call(
                "A smaller pool of local models (1,500 instead of 4,000): does the gap still fall as 1/√M?",
                {"pool_size": 1500},
                "from dpstack.multiparty import lemma2_simulation\n\n"
                "lemma2_simulation([1, 3, 10, 30, 100, 300, 1000],\n"
                "                  n_repeats=30, pool_size=1500, random_state=0)",
            ),
        ],
        # --- today's alternatives
        "pst_alternatives": [
            _live(
                "pst_alternatives",
                "pst_alternatives",
                "Below the paper's smallest ε: do output perturbation and DP-GD keep their AUC at ε = 0.05 "
                "(the papers' methods are committed at ε = 0.1 only)?",
                epsilons=[0.05, 0.1],
                n_repeats=5,
                datasets=["MNIST"],
            ),
        ],
        "mpl_alternatives": [
            _live(
                "mpl_alternatives",
                "mpl_alternatives",
                "With fewer parties (2,000 of 22 rows each): do PATE's noisy votes and party-level DP-FedAvg "
                "still keep their accuracy at ε = 0.1 (1/ε = 10)?",
                n_parties=[2000],
                inv_epsilons=[0.1, 1.0, 10.0],
                n_trials=1,
                n_noise=2,
            ),
        ],
        "pptl_alternatives": [
            _live(
                "pptl_alternatives",
                "pptl_alternatives",
                "Below the paper's smallest ε: does DP-GD from the private source still beat DP-GD on the target "
                "alone at ε = 0.25?",
                epsilons=[0.25, 0.5],
                n_repeats=5,
            ),
        ],
        "honest_tuning": [
            _live(
                "honest_tuning",
                "pst_honest_tuning",
                "At a larger total budget (ε = 8): does honest tuning still cost AUC, or does the noise of the "
                "selection stop mattering?",
                epsilons=[4.0, 8.0],
                n_repeats=3,
                datasets=["MNIST"],
            ),
        ],
        "accounting_checked": [
            _call(
                "A stricter δ (one in a million instead of one in a hundred thousand): how much more noise "
                "does each ε need, and does the gap between the accountants change?",
                {"delta": 1e-6},
                "from dpstack.companion.chapters.accounting_checked import accountant_table, noise_table\n\n"
                "accountant_table(epsilon=1.0, delta=1e-6)\n"
                "noise_table([0.1, 0.5, 1.0, 2.0, 4.0], delta=1e-6, steps=100)",
            ),
        ],
        # --- the foundation pages
        "plr": [
            _call(
                "A ridge ten times stronger, still fixed in advance: does PLR at ε = 0.1 get closer to the "
                "non-private model, and what does the larger λ cost at ε = ∞?",
                {"lam": 0.1},
                "import math\n\n"
                "from dpstack.companion.chapters.plr import auc_vs_n\n\n"
                "auc_vs_n([25, 50, 100, 150, 250], [0.1, 0.5, 1.0, 5.0, math.inf], n_repeats=10, lam=0.1, seed=0)",
            ),
        ],
        "audit": [
            _call(
                "A budget four times smaller: does every check of the audit still pass for PLR at ε = 0.25?",
                {"epsilon": 0.25},
                "from dpstack import PrivateLogisticRegression\n"
                "from dpstack.audit import audit_data, audit_estimator\n\n"
                "X, y = audit_data(random_state=0)\n"
                "report = audit_estimator(PrivateLogisticRegression(epsilon=0.25, lam=0.05, classes=[0, 1]), X, y,\n"
                "                         random_state=0)\n"
                "report.passed, report.failures",
            ),
        ],
        "datasets": [
            _call(
                "Another sample of the images: do the sizes, class balances and the share of clipped rows of the "
                "MNIST task change?",
                {"random_state": 1},
                "from dpstack.datasets import mnist_pst\n\n"
                "mnist = mnist_pst(random_state=1)\n"
                "mnist.steps, mnist.clipped_fraction",
            ),
        ],
        "mpl_theorem4": [
            _call(
                "The paper's λ = 10⁻⁴ instead of 0.05: is the small-noise regime, where the rate shows, still reached?",
                {"lam": 0.0001},
                "from dpstack.multiparty import excess_risk_simulation\n\n"
                "excess_risk_simulation([30, 100, 300, 1000, 3000], [0.25, 1.0, 4.0, 16.0], methods=('soft', 'vote'),\n"
                "                       lam=0.0001, n_draws=200, random_state=0)",
            ),
        ],
    }


def try_it_suggestions(page):
    """The :class:`Suggestion` list of ``page`` (a key of :data:`TRY_IT`)."""
    if page not in TRY_IT:
        raise ValueError(f"page={page!r} has no 'Try it' suggestions; pages with them: {sorted(TRY_IT)}")
    return list(TRY_IT[page])


def _papermill(page, notebook):
    """The papermill command: ``-p name value`` for a number or a word, ``-y "name: [...]"`` for a list."""
    flags = []
    for k, v in notebook.items():
        if isinstance(v, (list, tuple)):
            flags.append(f'-y "{k}: [{", ".join(repr(x) for x in v)}]"')
        else:
            flags.append(f"-p {k} {v}")
    return f"papermill notebooks/{page}.ipynb {page}_try.ipynb " + " ".join(flags)


def try_it(page):
    """The "Try it" box that ends an experiment or theorem page, as HTML.

    For each suggestion: the question it asks, the papermill command that re-runs the page with
    the changed parameters (when they are parameters of the page) and the equivalent Python call;
    for a registered experiment also the same call from a shell. Every call names the
    parameters it changes; the others keep the page's values.
    """
    items = []
    for s in try_it_suggestions(page):
        parts = [f"<p><b>{html.escape(s.question)}</b></p>"]
        if s.notebook:
            parts.append("<p>Re-run this page:</p>" + _pre(_papermill(page, s.notebook), "bash"))
            parts.append("<p>or the same in Python:</p>" + _pre(s.python, "python"))
        else:
            parts.append("<p>In Python (the page's grid is fixed; this runs the experiment directly):</p>")
            parts.append(_pre(s.python, "python"))
        if s.command:
            parts.append("<p>or from a shell (writes the table as CSV, with its provenance):</p>")
            parts.append(_pre(s.command, "bash"))
        items.append("".join(parts))
    body = "<hr/>".join(items)
    text = (
        '<div class="admonition tip dpstack-try-it"><p class="admonition-title">Try it</p>'
        + body
        + (
            "<p>A run that differs from the committed results is computed live and says so at the top of the "
            "page or in <code>run.description</code>; the paper's scale can take minutes to hours on a laptop.</p>"
            if any(s.command for s in try_it_suggestions(page))
            else ""
        )
        + "</div>"
    )
    try:
        from IPython.display import HTML
    except ImportError:  # pragma: no cover - IPython is installed with the book
        return text
    return HTML(text)


def _pre(code, language):
    return f'<div class="highlight-{language} notranslate"><div class="highlight"><pre>{html.escape(code)}</pre></div></div>'


#: Page → its "Try it" suggestions (:class:`Suggestion`), one entry per experiment, theorem and foundation page.
TRY_IT: dict[str, list] = _try_it()
