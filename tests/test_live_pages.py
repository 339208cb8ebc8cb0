"""The experiment pages' knobs: declared, checked in seconds, computed live when set, never over the committed page."""

import importlib.util
import re
from pathlib import Path

import nbformat
import papermill
import pytest

from dpstack.experiments import live
from dpstack.experiments.parameters import ParameterError

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("run_notebooks", ROOT / "scripts" / "run_notebooks.py")
run_notebooks = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run_notebooks)
FIG1 = ROOT / "notebooks" / "pst_fig1_epsilon.ipynb"


def _mnist_present():
    from dpstack.experiments import stacking

    try:
        stacking.require_data("MNIST")
    except Exception:  # noqa: BLE001 - absent data: the live run cannot be computed here
        return False
    return True


needs_mnist = pytest.mark.skipif(not _mnist_present(), reason="needs MNIST in DPSTACK_DATA")


def _text(nb):
    """Every output of the executed notebook as text (HTML tags dropped)."""
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            parts.append(str(data.get("text/markdown") or data.get("text/html") or out.get("text") or ""))
    return re.sub(r"<[^>]+>", " ", "\n".join(parts))


def test_a_page_with_several_grids_prefixes_each_grids_knobs():
    knobs = live.page_knobs("ruijin_transfer")
    assert knobs["epsilon_epsilons"] == ("ruijin_transfer_epsilon", "epsilons")
    assert knobs["groups_k_grid"] == ("ruijin_transfer_groups", "k_grid")
    assert knobs["branches_branches"] == ("ruijin_transfer_branches", "branches")
    # a page's main grid (named like the page) keeps the plain names
    assert live.page_knobs("pptl_table1_mnist")["epsilons"] == ("pptl_table1_mnist", "epsilons")
    assert live.page_knobs("pptl_table1_mnist")["nonprivate_n_repeats"] == ("pptl_table1_mnist_nonprivate", "n_repeats")
    # every page's parameter names are distinct and cover every knob of its grids
    for page, grids in live.page_experiments().items():
        mapping = live.page_knobs(page)
        assert sorted(mapping.values()) == sorted((g, k) for g in grids for k in live.knobs(g)), page


def test_a_pages_parameters_reach_the_right_grid_and_bad_values_name_the_parameter():
    page = {"profile": "paper", "n_jobs": 1, "seed": 0, "epsilon_epsilons": [0.5], "groups_k_grid": None}
    grids = live.check_page_parameters(page, "ruijin_transfer", "profile", "n_jobs", "seed")
    assert grids.knobs_of("ruijin_transfer_epsilon") == {"epsilons": [0.5]}
    assert grids.knobs_of("ruijin_transfer_groups") == {"k_grid": None}
    assert grids.live and grids.differences("ruijin_transfer_epsilon")["epsilons"][0] == [0.5]
    assert not grids.differences("ruijin_transfer_groups")
    with pytest.raises(ParameterError, match=r"parameter k_grid = \[3\].*prefixed 'groups_'"):
        live.check_page_parameters({**page, "groups_k_grid": [3]}, "ruijin_transfer", "profile", "n_jobs", "seed")


def test_the_committed_parameters_show_no_live_box():
    page = {"profile": "paper", "n_jobs": 1, "seed": 0, "epsilons": None, "n_repeats": 10}
    grids = live.check_page_parameters(page, "pst_fig1_epsilon", "profile", "n_jobs", "seed")
    assert not grids.live  # n_repeats = 10 is the committed value
    assert grids.box_html() is None
    assert live.check_page_parameters(
        {**page, "profile": "quick"}, "pst_fig1_epsilon", "profile", "n_jobs", "seed"
    ).live


def test_an_unknown_page_parameter_fails_in_the_kernel_naming_the_valid_ones(tmp_path):
    """Plain papermill (no pre-check): the page's check cell refuses the injected name at once."""
    with pytest.raises(papermill.PapermillExecutionError) as err:
        papermill.execute_notebook(
            str(FIG1),
            str(tmp_path / "out.ipynb"),
            parameters={"epsilon": 0.1},
            cwd=str(FIG1.parent),
            progress_bar=False,
        )
    assert err.value.ename == "ParameterError"
    assert (
        "unknown parameter 'epsilon': this page's parameters are profile, n_jobs, seed, epsilons, n_repeats, "
        "datasets, methods" in err.value.evalue
    )


def test_where_the_executed_notebook_goes(tmp_path):
    a, b = Path("notebooks/a.ipynb"), Path("notebooks/b.ipynb")
    assert run_notebooks.destinations([a, b], {}) == {a: None, b: None}  # no parameters: in place
    assert run_notebooks.destinations([a], {"x": 1}) == {a: run_notebooks.LIVE_DIR / "a.ipynb"}
    assert run_notebooks.destinations([a], {"x": 1}, in_place=True) == {a: None}
    assert run_notebooks.destinations([a], {"x": 1}, output=tmp_path / "o.ipynb") == {a: tmp_path / "o.ipynb"}
    assert run_notebooks.destinations([a, b], {"x": 1}, output=tmp_path) == {
        a: tmp_path / "a.ipynb",
        b: tmp_path / "b.ipynb",
    }
    with pytest.raises(ValueError, match="one notebook"):
        run_notebooks.destinations([a, b], {"x": 1}, output=tmp_path / "o.ipynb")
    with pytest.raises(ValueError, match="exclude each other"):
        run_notebooks.destinations([a], {"x": 1}, output=tmp_path, in_place=True)


@pytest.mark.slow  # one papermill execution with a live computation: about 20 s
@needs_mnist
def test_a_live_page_says_so_and_leaves_the_committed_notebook_alone(tmp_path, monkeypatch, capsys):
    """run_notebooks -p: the page computed live at the given ε, written beside, the committed file untouched."""
    monkeypatch.setattr(run_notebooks, "LIVE_DIR", tmp_path / "live")
    before = FIG1.read_bytes()
    argv = [str(FIG1), "-j", "1", "-p", "epsilons", "[0.1]", "-p", "datasets", "['MNIST']"]
    assert run_notebooks.main(argv + ["-p", "n_repeats", "2", "-p", "profile", "quick"]) == 0
    assert FIG1.read_bytes() == before
    out = tmp_path / "live" / "pst_fig1_epsilon.ipynb"
    assert f"written to {out}" in capsys.readouterr().out
    text = _text(nbformat.read(out, as_version=4))
    assert "Computed live" in text and "epsilons = [0.1]" in text and "n_repeats = 2" in text
    assert "n_jobs = 1" in text and "Verdicts of this live run" in text
    assert "do not apply to this run" in text


def test_the_rerunning_page_lists_every_pages_knobs_from_live():
    """The committed 'Re-running the book' page shows live.knobs_table's rows (re-execute it when knobs change)."""
    nb = nbformat.read(ROOT / "notebooks" / "rerunning.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and "knobs_table" in c.source)
    shown = re.sub(r"\s+", " ", _text(nbformat.v4.new_notebook(cells=[cell])))
    table = live.knobs_table()
    assert set(table["page"]) == set(live.page_experiments()) - set(live.PAGES_WITHOUT_KNOBS)
    for _, row in table.iterrows():
        assert f"{row['page']} -p {row['parameter']} " in shown, row.to_dict()
    assert shown.count(" -p epsilon_epsilons ") == 1 and " -p groups_k_grid " in shown
