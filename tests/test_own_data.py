"""The methods on your own data: the committed fixture, the guarantee's inputs, the page run on it."""

import math
import warnings
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest

from dpstack.base import PrivacyLeakWarning
from dpstack.companion.chapters.own_data import load_table, run_own_data

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "data" / "own_data"
TARGET, SOURCE = FIXTURE / "target.csv", FIXTURE / "source.csv"
IMPORTANCE = list(range(12, 0, -1))
SMALL = dict(epsilons=[1.0, math.inf], n_repeats=2, n_groups=3)


def _run(**kw):
    args = dict(feature_importance=IMPORTANCE, **SMALL)
    args.update(kw)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PrivacyLeakWarning)
        res = run_own_data(args.pop("data", TARGET), "diabetes", [0, 1], 6.0, **args)
    return res, [str(w.message) for w in caught if issubclass(w.category, PrivacyLeakWarning)]


def test_the_fixture_is_what_its_script_writes(tmp_path, monkeypatch):
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_own_data", ROOT / "tests" / "data" / "make_own_data.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "HERE", tmp_path)
    module.main()
    for name in ("target.csv", "source.csv"):
        assert (tmp_path / name).read_bytes() == (FIXTURE / name).read_bytes(), name


def test_every_method_at_every_epsilon_with_the_ledger_of_a_transfer_model():
    res, warned = _run(source=SOURCE)
    assert list(res.frame["method"].unique()) == ["PLR", "PST-S", "PST-F(W)", "PPTL-FS(W)", "SimComb"]
    assert len(res.frame) == 5 * 2 * 2 and res.frame["auc"].between(0, 1).all()
    assert len(res.summary) == 10 and (res.summary["ci_low"] <= res.summary["mean"]).all()
    assert res.model.privacy_.per_part() == {"D_s": 1.0, "D_t/D_t0": 1.0, "D_t/D_t1": 1.0}
    assert list(res.ledger["part"]) == ["D_s", "D_t/D_t0", "D_t/D_t1"] and not res.ledger["outside"].any()
    # nothing but the test AUCs is outside the guarantee with public importances and a fixed λ
    assert res.outside_guarantee == [
        "the test AUCs are computed on held-out private rows (what you read, not what you publish)"
    ]
    assert warned == [f"outside the privacy guarantee: {s}" for s in res.outside_guarantee]


def test_steps_on_the_private_rows_are_warned_and_listed():
    res, warned = _run(lam_grid=[1e-3, 1e-1], feature_importance="variance", methods=["PLR", "PST-F"])
    assert "λ chosen by validation AUC on a third of the private training rows" in res.outside_guarantee
    assert "feature importances = variances of the private training rows" in res.outside_guarantee
    assert len(warned) == len(res.outside_guarantee) == 3
    assert set(res.frame["lam"]) <= {1e-3, 1e-1}
    assert set(res.frame["method"]) == {"PLR", "PST-F(W)"}


def test_without_importances_the_groups_are_random():
    res, _ = _run(feature_importance=None, methods=["PST-F"], source=SOURCE)
    assert set(res.frame["method"]) == {"PST-F(U)"}


def test_the_public_bound_is_applied_so_only_the_scaled_rows_matter(tmp_path):
    """Rows × 10 with a bound × 10 give the same models (up to rounding), so the bound is what scales the rows."""
    frame = pd.read_csv(TARGET)
    features = [c for c in frame.columns if c != "diabetes"]
    frame[features] *= 10
    scaled = tmp_path / "scaled.csv"
    frame.to_csv(scaled, index=False)
    a, _ = _run(methods=["PLR", "PST-F"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        b = run_own_data(
            scaled, "diabetes", [0, 1], 60.0, feature_importance=IMPORTANCE, methods=["PLR", "PST-F"], **SMALL
        )
    np.testing.assert_allclose(a.frame["auc"], b.frame["auc"], atol=1e-9)


def test_a_numpy_file_gives_the_csv_results(tmp_path):
    frame = pd.read_csv(TARGET)
    path = tmp_path / "target.npy"
    np.save(path, frame.to_numpy(dtype=float))
    X, y, names = load_table(path, label=12)
    assert X.shape == (400, 12) and names[0] == "x0"
    a, _ = _run(methods=["PLR"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        b = run_own_data(path, 12, [0, 1], 6.0, feature_importance=IMPORTANCE, methods=["PLR"], **SMALL)
    pd.testing.assert_frame_equal(a.frame, b.frame)


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(classes=[1]), "classes must list the two public labels"),
        (dict(classes=[0, 2]), "the labels of data must lie in classes"),
        (dict(label="outcome"), "label column 'outcome' is not in target.csv"),
        (dict(norm_bound=0.0), "norm_bound must be a finite number > 0"),
        (dict(methods=["SimComb"]), r"methods \['SimComb'\] need a source"),
        (dict(methods=["GBM"]), "methods must be taken from"),
        (dict(n_repeats=1), "n_repeats must be an integer >= 2"),
        (dict(epsilons=[0.0]), "epsilons must be a non-empty list of numbers >= 1e-300"),
        (dict(epsilons="abc"), "epsilons must be a non-empty list of numbers"),
        (dict(epsilons=[1e-320]), "epsilons must be a non-empty list of numbers >= 1e-300"),
        (dict(seed=1.5), "seed must be an integer >= 0, got 1.5"),
        (dict(seed=-1), "seed must be an integer >= 0, got -1"),
        (dict(n_jobs=0), "n_jobs must be an integer >= 1, or -1"),
        (dict(test_fraction=0.999), r"test_fraction=0.999 leaves \d+ of the \d+ rows for training"),
        (dict(feature_importance=[1.0, 2.0]), "feature_importance must hold 12 finite numbers"),
    ],
)
def test_unusable_inputs_are_refused_naming_the_parameter(kw, match):
    args = dict(data=TARGET, label="diabetes", classes=[0, 1], norm_bound=6.0, n_repeats=2, epsilons=[1.0])
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        run_own_data(args.pop("data"), args.pop("label"), args.pop("classes"), args.pop("norm_bound"), **args)


def test_the_page_runs_on_the_fixture_with_parameters(tmp_path):
    """The page executed as a user would, with papermill parameters; its table, box and ledger are there."""
    import papermill

    out = tmp_path / "out.ipynb"
    papermill.execute_notebook(
        str(ROOT / "notebooks" / "own_data.ipynb"),
        str(out),
        parameters=dict(
            data_path=str(TARGET),
            source_path=str(SOURCE),
            n_repeats=2,
            epsilons=[1.0, float("inf")],
            lam_grid=[0.01, 1.0],
        ),
        cwd=str(tmp_path),
        progress_bar=False,
        kernel_name="python3",
    )
    nb = nbformat.read(out, as_version=4)
    text = "\n".join(
        str(o.get("text", ""))
        + str(o.get("data", {}).get("text/plain", ""))
        + str(o.get("data", {}).get("text/markdown", ""))
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
    )
    for part in (
        "PPTL-FS(W)",
        "SimComb",
        "PST-S",
        "ε = ∞",
        "λ chosen by validation AUC",
        "D_t1",  # the second target part of the ledger (the table typesets D_t as Dₜ)
        "PrivateTransferStacking",
    ):
        assert part in text, part
    assert any(
        "image/svg+xml" in o.get("data", {}) or "image/png" in o.get("data", {})
        for c in nb.cells
        for o in c.get("outputs", [])
    )
