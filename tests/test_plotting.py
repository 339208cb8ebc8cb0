"""The book's figure style: confidence bands clipped to the metric's range, grid ticks, one colour per method."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpstack.companion.plotting import color_for, mean_interval, plot_mean_with_spread


def test_band_is_the_clipped_confidence_interval_of_the_mean():
    df = pd.DataFrame({"eps": [0.1] * 3 + [1.0] * 3, "auc": [0.95, 0.99, 1.0, 0.5, 0.7, 0.6], "method": "PLR"})
    fig, ax = plt.subplots()
    plot_mean_with_spread(ax, df, "eps", "auc", "method", logx=True)
    verts = ax.collections[0].get_paths()[0].vertices
    assert verts[:, 1].max() <= 1.0  # clipped at AUC 1
    m, lo, hi = mean_interval([0.5, 0.7, 0.6])
    assert (lo, hi) == pytest.approx(stats.t.interval(0.95, 2, loc=0.6, scale=stats.sem([0.5, 0.7, 0.6])))
    assert np.isclose(verts[:, 1], lo).any() and np.isclose(verts[:, 1], hi).any()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0.1", "1"]
    assert ax.lines[0].get_color() == color_for("PLR")
    plt.close(fig)


def test_colours_are_stable_for_unknown_labels():
    assert color_for("some new method") == color_for("some new method")
    # PPTL-FS(W) is PST-H(W) under PPTL's name (one colour), and is drawn beside PST-F(W) on the
    # own-data page (two colours)
    assert color_for("PPTL-FS(W)") == color_for("PST-H") != color_for("PST-F(W)")


SVG_RUN = """
import matplotlib
matplotlib.use("module://matplotlib_inline.backend_inline")
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
import matplotlib.pyplot as plt
import pandas as pd
from dpstack.companion.plotting import plot_mean_with_spread, style
style()
df = pd.DataFrame({"eps": [0.1, 0.1, 1.0, 1.0], "auc": [0.6, 0.7, 0.8, 0.9], "method": "PLR"})
fig, ax = plt.subplots()
plot_mean_with_spread(ax, df, "eps", "auc", "method", logx=True)
ax.set_title("one figure")
data, _ = shell.display_formatter.format(fig)
import sys
sys.stdout.write(data.get("image/svg+xml", "NO SVG: " + ", ".join(sorted(data))))
"""


def test_notebook_figures_are_svg_and_identical_from_run_to_run():
    import os
    import subprocess
    import sys
    from pathlib import Path

    # Without VIRTUAL_ENV: the children run this interpreter, and a VIRTUAL_ENV naming another venv
    # (one activated in the calling shell) makes IPython add that venv's packages to sys.path.
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    # two fresh interpreters (hash seeds, ids and counters start anew), run side by side
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", SVG_RUN], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        for _ in range(2)
    ]
    outputs = [p.communicate() for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err[-2000:] for _, err in outputs]
    runs = [out for out, _ in outputs]
    assert runs[0].lstrip().startswith("<") and "<svg" in runs[0], runs[0][:200]
    assert "one figure" in runs[0]  # text kept as text (svg.fonttype none)
    assert runs[0] == runs[1]


def test_notebook_setup_applies_the_style_and_the_pandas_options():
    from dpstack.companion.plotting import PANDAS_DISPLAY, notebook_setup

    with pd.option_context("display.precision", 9, "display.max_colwidth", 5), matplotlib.rc_context({"font.size": 20}):
        notebook_setup()
        assert pd.get_option("display.precision") == 4 and pd.get_option("display.max_colwidth") == 100
        assert all(pd.get_option(k) == v for k, v in PANDAS_DISPLAY.items())
        assert plt.rcParams["font.size"] == 10 and plt.rcParams["svg.hashsalt"] == "dpstack"
