"""The book's one figure style, enforced on every figure.

Three layers:

* :func:`dpstack.companion.plotting.check_figure` itself: a clean figure passes, and each way of breaking
  the style (a 6 pt font, a legend over the data, a colour outside the map or a method in another
  method's colour, a colour-coded panel without a key, a scientific tick label, no alt text or a
  file name as alt text) is reported;
* the package's figure functions, drawn on small inputs, pass the check;
* every figure of the book's notebooks is shown through :func:`dpstack.companion.plotting.show_figure` (no
  ``plt.show()``), no notebook sets its own colours, and each figure in the executed outputs carries
  its alt text, no recorded problem, and text of at least 9 px at the column widths of a 1400 px and
  a 400 px window (read from the SVG the page shows).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from dpstack.companion import plotting as P

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
ALT = "A line chart of test AUC against epsilon for three methods, each rising towards the non-private value."


@pytest.fixture(autouse=True)
def book_style():
    with plt.rc_context():
        P.style(vector=False)
        yield
    plt.close("all")


def clean_figure(n_panels=2):
    fig, axes = P.panels(n_panels, height=2.8) if n_panels > 1 else (None, None)
    if fig is None:
        fig, ax = P.panels(1)
        axes = [ax]
    x = np.logspace(-1, 1, 8)
    for ax in axes:
        for k, method in enumerate(["PLR", "PST-S", "PST-F(W)"]):
            ax.plot(x, 0.6 + 0.1 * k + 0.02 * np.log(x), marker="o", label=method, color=P.color_for(method))
        ax.set(xscale="log", xlabel="ε", ylabel="test AUC", title="a panel")
        ax.legend()
    return fig


def problems_of(fig, alt=ALT, finish=True):
    if finish:
        P.finish_figure(fig, alt=alt)
    elif alt is not None:
        fig.dpstack_alt = alt
    return P.check_figure(fig)


# --- the check itself ------------------------------------------------------------------------


def test_clean_figure_passes():
    assert problems_of(clean_figure()) == []


def test_small_font_is_found():
    fig = clean_figure()
    fig.axes[0].set_xlabel("ε", fontsize=6)
    found = problems_of(fig)
    assert any("under 9 px" in p and "6 pt" in p for p in found), found


def test_wide_side_by_side_figure_is_found():
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))  # the old three-panel layout: 10 pt text ~ 3 px on a phone
    for ax in axes:
        ax.plot([0, 1], [0, 1], label="PLR", color=P.color_for("PLR"))
    found = problems_of(fig)
    assert any("368 px column" in p for p in found), found


def test_legend_over_the_data_is_found():
    fig = clean_figure(1)
    ax = fig.axes[0]
    ax.legend(loc="center", bbox_to_anchor=(0.5, 0.6), bbox_transform=ax.transAxes)  # right over the curves
    found = problems_of(fig, finish=False)
    assert any("legend drawn over the data" in p for p in found), found
    P.finish_figure(fig)  # moved below the panels: the same figure passes
    assert P.check_figure(fig) == []


def test_hard_coded_colour_is_found():
    fig = clean_figure(1)
    fig.axes[0].plot([0.1, 10], [0.5, 0.55], color="#123456", label="a baseline")
    found = problems_of(fig)
    assert any("not from the book's colour map" in p for p in found), found


def test_method_in_another_methods_colour_is_found():
    fig = clean_figure(1)
    fig.axes[0].lines[0].set_color(P.COLORS["SimComb"])  # PLR drawn in SimComb's purple
    found = problems_of(fig)
    assert any("'PLR'" in p and "not the book's" in p for p in found), found


def test_colour_coded_panel_needs_a_key():
    fig, ax = P.panels(1)
    points = ax.scatter([1, 2, 3], [1, 2, 3], c=[0.1, 1.0, 10.0])
    assert any("no colour key" in p for p in problems_of(fig)), "a scatter coloured by ε without a colour bar"
    fig.colorbar(points, ax=ax, label="ε")
    assert P.check_figure(fig) == []


@pytest.mark.parametrize("alt", [None, "", "e1e098a7464dac023e5ee5a0dc999.svg", "a figure"])
def test_alt_text_is_required(alt):
    found = problems_of(clean_figure(1), alt=alt, finish=alt is not None)
    assert any("alt text" in p for p in found), found


def test_scientific_and_offset_ticks_are_replaced():
    fig, ax = P.panels(1)
    ax.plot([1.0, 1.05], [1.0002, 1.0004], color="k")  # an offset on y, a sub-decade log axis on x
    ax.set_xscale("log")
    assert P.check_figure(fig), "matplotlib's default ticks should be reported"
    assert problems_of(fig) == []


def test_colour_for_is_one_map():
    assert P.color_for("PST-S — papers' protocol") == P.COLORS["PST-S"]
    assert P.color_for("SimComb") == P.COLORS["SimComb"]
    from dpstack.companion.chapters.own_data import METHODS
    from dpstack.companion.papers.pptl.grids import TRANSFER_METHODS

    # methods drawn together on one page never share a colour
    for together in (
        ("vote", "soft", "avg", "batch", "indiv"),
        ("PLR", "PST-S", "PST-F(U)", "PST-F(W)", "PST-H"),
        TRANSFER_METHODS,
        METHODS,
        ("C-hl", "C-mv", "C-wmv"),
    ):
        assert len({P.color_for(m) for m in together}) == len(together), together


# --- the package's figure functions on small inputs --------------------------------------------


def test_plot_mean_with_spread_figure():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        [
            {"epsilon": e, "auc": 0.7 + 0.05 * np.log10(e) + 0.01 * rng.normal(), "method": m}
            for m in ("PLR", "PST-S", "PST-F(U)", "PST-F(W)")
            for e in (0.1, 0.5, 1.0, 5.0)
            for _ in range(4)
        ]
    )
    fig, ax = P.panels(1)
    P.plot_mean_with_spread(ax, frame, "epsilon", "auc", "method", logx=True)
    ax.legend()
    assert problems_of(fig) == []


def test_privacy_loss_histograms():
    fig, axes = P.panels(2, height=2.6)
    rng = np.random.default_rng(1)
    for ax, eps in zip(axes, (0.5, 2.0)):
        P.plot_privacy_loss_histogram(ax, rng.uniform(-eps, eps, 500), eps)
        ax.set_title(f"ε = {eps:g}")
    assert problems_of(fig) == []


def test_mpl_accuracy_panels():
    from dpstack.companion.papers.mpl import pages as mpl_report

    rng = np.random.default_rng(2)
    rows = []
    for M in (10, 100):
        for inv in (0.0, 0.01, 0.1, 1.0):
            for method in ("vote", "soft", "avg", "batch", "indiv"):
                for r in range(3):
                    rows.append(
                        {
                            "n_parties": M,
                            "inv_epsilon": inv,
                            "method": method,
                            "repeat": r,
                            "noise": "laplace",
                            "accuracy": float(np.clip(0.9 - 0.2 * inv + 0.01 * rng.normal(), 0, 1)),
                        }
                    )
    df = pd.DataFrame(rows)
    fig, axes = P.panels(2, height=3.2)
    try:
        for ax, M in zip(axes, (10, 100)):
            mpl_report.plot_accuracy(ax, df, M)
    except (KeyError, TypeError, ValueError) as exc:  # the frame's columns are the report's own
        pytest.skip(f"plot_accuracy needs the experiment's full frame: {exc}")
    assert problems_of(fig) == []


def test_own_data_figure():
    from types import SimpleNamespace

    from dpstack.companion.chapters.own_data import plot_own_data

    rng = np.random.default_rng(3)
    frame = pd.DataFrame(
        [
            {"method": m, "epsilon": e, "auc": 0.8 - 0.1 / e + 0.01 * rng.normal() if np.isfinite(e) else 0.85}
            for m in ("PLR", "PST-S")
            for e in (0.5, 1.0, 5.0, np.inf)
            for _ in range(3)
        ]
    )
    ax = plot_own_data(SimpleNamespace(frame=frame))
    assert problems_of(ax.figure) == []


def test_protocol_sensitivity_figure():
    from dpstack.companion import variants as protocols
    from dpstack.companion.chapters import protocol_sensitivity

    effects = pd.DataFrame(
        [
            {
                "claim": "PST-F(W) > PLR",
                "dataset": "MNIST",
                "where": "ε = 0.1",
                "protocol": p,
                "effect": e,
                "ci_low": e - 0.02,
                "ci_high": e + 0.02,
            }
            for p, e in (("as in the book", 0.03), ("refit on all", 0.01), ("no validation", -0.01))
        ]
    )
    means = pd.DataFrame(
        [
            {
                "table": "PST Figure 1",
                "dataset": "MNIST",
                "method": m,
                "epsilon": e,
                "as in the book": 0.7 + 0.02 * k + 0.01 * np.log(e),
                protocols.REFIT: 0.69 + 0.02 * k + 0.01 * np.log(e),
            }
            for k, m in enumerate(("PLR", "PST-S", "PST-F(W)"))
            for e in (0.1, 1.0, 10.0)
        ]
    )
    fig = protocol_sensitivity._figure(effects, means)
    assert problems_of(fig) == []


# --- every figure of the notebooks ------------------------------------------------------------

HARD_CODED_COLOUR = re.compile(r"#[0-9a-fA-F]{6}\b|[\"']tab:[a-z]+[\"']|fontsize\s*=")


def code_cells(path):
    return [
        (i, "".join(c["source"]), c)
        for i, c in enumerate(json.loads(path.read_text())["cells"])
        if c["cell_type"] == "code"
    ]


def image_outputs(cell):
    return [o for o in cell.get("outputs", []) if any(k.startswith("image/") for k in o.get("data", {}))]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_sources_use_the_style(path):
    problems = []
    for i, source, _cell in code_cells(path):
        code = "\n".join(line.split("  # ")[0] for line in source.splitlines())  # comments may name colours
        for match in HARD_CODED_COLOUR.finditer(code):
            problems.append(f"cell {i}: sets its own colour or font ({match.group(0)!r}); use the book's map")
        problems += [f"cell {i}: {p}" for p in alt_texts_of(source)]
        draws = re.search(r"\bplt\.subplots\(|\bpanels\(|\.figure\b|plot_own_data\(", source)
        if "plt.show()" in source or (draws and "show_figure(" not in source and "def " not in source):
            problems.append(f"cell {i}: a figure not shown through show_figure (alt text and style check)")
    assert not problems, "\n".join(problems)


def alt_texts_of(source):
    """Problems of the alt texts a cell passes to show_figure (a literal or an f-string's literal parts)."""
    import ast

    code = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())
    try:
        tree = ast.parse(code)  # IPython magics blanked out
    except SyntaxError as exc:
        return [f"the cell does not parse: {exc}"]
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "show_figure":
            alt = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "alt"), None)
            if alt is None:
                problems.append("show_figure without alt text")
                continue
            parts = [alt] if not isinstance(alt, ast.BinOp) else [alt.left, alt.right]
            text = ""
            for part in parts:
                if isinstance(part, ast.Constant):
                    text += str(part.value)
                elif isinstance(part, ast.JoinedStr):
                    text += "".join(str(v.value) if isinstance(v, ast.Constant) else "{}" for v in part.values)
                else:
                    text = None
                    break
            if text is not None and P.alt_text_problem(text):
                problems.append(P.alt_text_problem(text))
    return problems


def svg_text_px(svg):
    """The smallest text size (CSS px) of an SVG shown at each column width of the book."""
    width_pt = float(re.search(r'<svg[^>]*\bwidth="([0-9.]+)pt"', svg).group(1))
    sizes = [float(s) for s in re.findall(r"font-size:\s*([0-9.]+)px", svg)]
    sizes += [float(s) for s in re.findall(r"font:\s*(?:[a-z]+\s+)*([0-9.]+)px", svg)]
    if not sizes:
        return {}
    return {w: min(sizes) * min(w, width_pt * 96 / 72) / width_pt for w in P.COLUMN_WIDTHS.values()}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_executed_figures_meet_the_style(path):
    problems = []
    for i, _source, cell in code_cells(path):
        for output in image_outputs(cell):
            meta = output.get("metadata", {}).get("dpstack")
            if meta is None:
                problems.append(f"cell {i}: a figure executed without show_figure (no alt text, not checked)")
                continue
            alt_problem = P.alt_text_problem(meta.get("alt"))
            if alt_problem:
                problems.append(f"cell {i}: {alt_problem}")
            problems += [f"cell {i}: {p}" for p in meta.get("problems", [])]
            svg = output["data"].get("image/svg+xml")
            if svg:
                svg = "".join(svg) if isinstance(svg, list) else svg
                for column, px in svg_text_px(svg).items():
                    if px < P.MIN_TEXT_PX - 1e-9:
                        problems.append(f"cell {i}: text {px:.1f} px in the {column} px column")
    assert not problems, "\n".join(problems)


def test_colliding_tick_labels_are_found():
    fig, ax = P.panels(1)
    ax.plot([0.9, 1.1], [0, 1], color="k")
    ax.set_xscale("log")
    values = np.linspace(0.9, 1.1, 21)
    ax.set_xticks(values, [f"{v:.2f}" for v in values])  # 21 labels in 5 inches
    fig.dpstack_alt = ALT
    assert any("tick labels collide" in p for p in P.check_figure(fig))


def test_symlog_axis_gets_plain_ticks():
    fig, ax = P.panels(1)
    ax.plot([10, 100, 1000], [1.02643, 0.2, 0.0], color="k")
    ax.set_yscale("symlog")
    ax.set_ylim(bottom=0)
    assert problems_of(fig) == []


def test_bar_chart_cut_at_its_axis_passes_with_the_legend_below():
    fig, ax = P.panels(1)
    for i, method in enumerate(("PST-S", "PST-F(W)")):
        ax.bar(np.arange(5) + 0.4 * i, [0.8, 0.85, 0.9, 0.7, 0.75], width=0.4, label=method, color=P.color_for(method))
    ax.set_ylim(0.4, 1.0)  # the bars below 0.4 are clipped away, not under the legend
    ax.legend()
    assert problems_of(fig) == []


def test_show_figure_displays_an_image_with_its_alt_text(monkeypatch):
    import html

    shown = []
    monkeypatch.setattr(P, "_in_ipython", lambda: True)
    monkeypatch.setattr("IPython.display.display", lambda data, **kw: shown.append((data, kw)))
    fig = clean_figure(1)
    assert P.show_figure(fig, ALT) == []
    ((data, kw),) = shown
    assert f'alt="{html.escape(ALT, quote=True)}"' in data["text/html"]
    assert data["text/html"].count("data:image/svg+xml;base64,") == 1 and data["image/svg+xml"].lstrip().startswith(
        "<?xml"
    )
    meta = kw["metadata"]["dpstack"]
    assert meta["alt"] == ALT and meta["problems"] == [] and len(meta["layout"]["panels"]) == 1
    assert {s["label"] for s in meta["layout"]["panels"][0]["series"]} == {"PLR", "PST-S", "PST-F(W)"}
    assert min(svg_text_px(data["image/svg+xml"]).values()) >= P.MIN_TEXT_PX
