"""Every figure's caption tells the truth about the figure it sits under.

The figures of the book are drawn by the package and shown through
:func:`dpstack.companion.plotting.show_figure`, which records the figure's layout in the output's
metadata (its panels and where they sit, each panel's labelled series and their colours, every
colour drawn, the tick labels). This test reads the executed notebooks: for each figure it takes
its caption — the italic paragraph right under it (the next Markdown cell starting with ``*``, or
Markdown the cell or the next one prints), and the figure's alt text — and fails on

* "left" / "right" naming a panel when the panels are stacked one above another;
* a colour word ("grey dashed", "in red") that names no colour drawn in the figure (a heat map
  or a scatter coloured by a value draws every colour of its colour map);
* two series in one colour in one panel (:func:`~dpstack.companion.plotting.shared_colours`);
* a tick labelled with a value that was not run, e.g. ε = ∞ drawn at a tick labelled "16" (the
  figure check :func:`~dpstack.companion.plotting.check_figure` records it at execution);
* a stray empty output (a ``[]`` or ``None`` box) in a cell that shows a figure.

Each rule is planted in a small figure and notebook below and seen to fail.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest

from dpstack.companion import plotting as P

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

#: A caption naming a panel by its side: "Left: …", "left, the …", "(right)", "on the left", "right panel".
SIDE = re.compile(
    r"\b(?:Left|Right)\s*[:,]"
    r"|\b(?:left|right)(?:-hand)?\s+(?:panel|plot|chart|figure|axis|axes)s?\b"
    r"|\((?:left|right)\)"
    r"|\b(?:on|in) the (?:left|right)\b(?!\s+(?:of|end|edge)\b)"
    r"|[;:,]\s*(?:left|right)\s*[,:]",
    re.I,
)
#: A colour word in a caption (not "black box", a term of the audit).
COLOUR = re.compile(r"\b(" + "|".join(P.COLOUR_WORDS) + r")\b(?![- ]box)", re.I)
#: What an output shows when a cell ends on a value nobody meant to print.
STRAY = {"[]", "None", "{}", "()", "''", '""'}


def _text(value):
    return "".join(value) if isinstance(value, list) else (value or "")


def figure_captions(nb):
    """(cell index, layout or None, alt, caption text, stray outputs) for each figure of a notebook."""
    cells = nb["cells"]
    found = []
    for i, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        outputs = cell.get("outputs", [])
        for j, output in enumerate(outputs):
            if "image/svg+xml" not in output.get("data", {}) and "image/png" not in output.get("data", {}):
                continue
            meta = output.get("metadata", {}).get("dpstack", {})
            caption = []
            for later in outputs[j + 1 :]:
                if any(k.startswith("image/") for k in later.get("data", {})):
                    break
                caption.append(_text(later.get("data", {}).get("text/markdown")))
            nxt = cells[i + 1] if i + 1 < len(cells) else None
            if nxt is not None and nxt["cell_type"] == "markdown" and _text(nxt["source"]).lstrip().startswith("*"):
                caption.append(_text(nxt["source"]).split("\n\n")[0])
            elif nxt is not None and nxt["cell_type"] == "code":
                for later in nxt.get("outputs", [])[:1]:
                    text = _text(later.get("data", {}).get("text/markdown"))
                    if text.lstrip().startswith("*"):
                        caption.append(text.split("\n\n")[0])
            stray = [
                _text(o.get("data", {}).get("text/plain")).strip()
                for o in outputs
                if o.get("output_type") in ("execute_result", "display_data")
                and set(o.get("data", {})) == {"text/plain"}
                and _text(o["data"]["text/plain"]).strip() in STRAY
            ]
            stray += [
                "an empty text box"
                for o in outputs
                if o.get("output_type") == "stream" and not _text(o.get("text")).strip()
            ]
            found.append((i, meta.get("layout"), meta.get("alt", ""), " ".join(c for c in caption if c), stray))
    return found


def caption_problems(layout, alt, caption, stray=()):
    """What a figure's caption (and alt text) says that its layout contradicts; see the module."""
    problems = []
    if layout is None:
        return ["no layout recorded (not shown through show_figure, or executed before it recorded one)"]
    words = f"{caption} {alt}"
    if P.panels_stacked(layout):
        side = SIDE.search(words)
        if side:
            problems.append(f"names a panel by its side ({side.group(0).strip()!r}) but the panels are stacked")
    drawn = set(layout.get("colours", []))
    for match in COLOUR.finditer(words):
        word = match.group(1).lower()
        if not P.COLOUR_WORDS[word] & drawn:
            problems.append(f"says {word!r} but nothing {word} is drawn (drawn: {', '.join(sorted(drawn))})")
    for panel in layout["panels"]:
        for a, b, colour in P.shared_colours(panel["series"]):
            problems.append(f"{a!r} and {b!r} share one colour ({colour}) in panel {panel['title']!r}")
    problems += [f"a stray output box under the figure: {s}" for s in stray]
    return problems


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_caption_is_true_to_its_figure(path):
    nb = json.loads(path.read_text())
    problems = []
    for i, layout, alt, caption, stray in figure_captions(nb):
        problems += [f"cell {i}: {p}" for p in caption_problems(layout, alt, caption, stray)]
    assert not problems, "\n".join(problems)


def test_the_book_has_captioned_figures():
    figures = [f for path in NOTEBOOKS for f in figure_captions(json.loads(path.read_text()))]
    assert len(figures) >= 25
    assert sum(1 for f in figures if f[3]) >= 20  # most figures have a caption under them


# --- each rule, planted ----------------------------------------------------------------------


def _layout(fig):
    P.finish_figure(fig, alt="A planted figure for the caption test, two panels of test AUC against ε.")
    layout = P.figure_layout(fig)
    plt.close(fig)
    return json.loads(json.dumps(layout))  # as stored in a notebook


def _two_panels(stacked=True, colours=("PLR", "PST-S")):
    fig, axes = P.panels(2, height=2.6) if stacked else plt.subplots(1, 2, figsize=(8, 3))
    for ax in axes:
        for method, colour in zip(("PLR", "PST-S"), colours):
            ax.plot([0.1, 1, 10], [0.6, 0.7, 0.8], label=method, color=P.color_for(colour), marker="o")
        ax.set(xscale="log", title="a panel")
    return fig


def test_a_planted_left_right_caption_on_stacked_panels_fails():
    layout = _layout(_two_panels(stacked=True))
    assert P.panels_stacked(layout)
    assert any("by its side" in p for p in caption_problems(layout, "", "*Left: MNIST; right: NEWS20.*"))
    assert caption_problems(layout, "", "*Top: MNIST; bottom: NEWS20; ∞ at the right end of the axis.*") == []
    side_by_side = _layout(_two_panels(stacked=False))
    assert not P.panels_stacked(side_by_side)
    assert caption_problems(side_by_side, "", "*Left: MNIST; right: NEWS20.*") == []


def test_a_planted_colour_word_that_is_not_drawn_fails():
    layout = _layout(_two_panels())  # PLR blue, PST-S orange
    assert {"blue", "orange"} <= set(layout["colours"])
    found = caption_problems(layout, "", "*PLR in blue; the vote (grey dashed) falls.*")
    assert len(found) == 1 and "'grey'" in found[0], found
    assert caption_problems(layout, "", "*PLR in blue, PST-S in orange; the audit is not a black box.*") == []


def test_a_planted_shared_colour_fails():
    layout = _layout(_two_panels(colours=("PST-F(W)", "PST-F(W)")))  # PLR drawn in PST-F(W)'s red
    found = caption_problems(layout, "", "")
    assert any("share one colour" in p and "'PLR' and 'PST-S'" in p for p in found), found
    # one method drawn two ways (ours solid, the paper's dashed) is one series to a reader
    fig, ax = P.panels(1)
    ax.plot([1, 2], [0.6, 0.7], color=P.color_for("PLR"), label="PLR")
    ax.plot([1, 2], [0.62, 0.72], color=P.color_for("PLR"), ls="--", label="PLR (paper)")
    assert caption_problems(_layout(fig), "", "") == []
    fig = _two_panels(colours=("PST-F(W)", "PST-F(W)"))
    assert any("share one colour" in p for p in P.check_figure(P.finish_figure(fig, alt="x " * 8)))  # at execution too


def test_a_planted_16_tick_for_infinity_fails():
    import pandas as pd

    from dpstack.companion.papers import stacked_pages

    frame = pd.DataFrame({"epsilon": [0.5, 1.0, 8.0, np.inf] * 2, "auc": np.linspace(0.6, 0.9, 8), "method": "PLR"})
    fig, ax = P.panels(1)
    part, inf_pos = stacked_pages.eps_axis(frame)
    P.plot_mean_with_spread(ax, part, "eps_pos", "auc", "method")
    stacked_pages.set_eps_ticks(ax, part, inf_pos)
    P.finish_figure(fig, alt="A planted figure: test AUC against ε with the non-private value at the right.")
    assert [t.get_text() for t in ax.get_xticklabels()][-1] == "∞"  # the book's style keeps the label
    assert not [p for p in P.check_figure(fig) if "stands for" in p]
    ax.set_xticks(ax.get_xticks(), [f"{v:g}" for v in ax.get_xticks()])  # the plant: "16" under ε = ∞
    found = P.check_figure(fig)
    assert any("tick at 16" in p and "'16'" in p and "stands for ∞" in p for p in found), found
    plt.close(fig)


def test_a_planted_stray_output_fails():
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "source": "show_figure(fig, alt)",
                "outputs": [
                    {"output_type": "display_data", "data": {"image/svg+xml": "<svg/>"}, "metadata": {"dpstack": {}}},
                    {"output_type": "execute_result", "data": {"text/plain": "[]"}, "metadata": {}},
                ],
            },
            {"cell_type": "markdown", "source": "*Figure: the AUC.*"},
        ]
    }
    ((_, _layout_, _alt, caption, stray),) = figure_captions(nb)
    assert caption == "*Figure: the AUC.*" and stray == ["[]"]
    layout = {"panels": [], "colours": [], "colour_coded": False}
    assert caption_problems(layout, "", caption, stray) == ["a stray output box under the figure: []"]
    assert caption_problems(None, "", caption)  # a figure without its layout cannot be checked: fails


def test_show_figure_leaves_no_stray_output():
    problems = P.show_figure(_two_panels(), "A figure of two stacked panels of test AUC against ε, one line each.")
    assert problems == [] and hasattr(problems, "_ipython_display_")
