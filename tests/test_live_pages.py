"""The experiment pages' knobs: declared, checked in seconds, computed live when set, never over the committed page."""

import importlib.util
import re
from pathlib import Path

import nbformat
import papermill
import pytest

from dpstack.companion import live, show
from dpstack.companion.parameters import ParameterError

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("run_notebooks", ROOT / "scripts" / "run_notebooks.py")
run_notebooks = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run_notebooks)
FIG1 = ROOT / "notebooks" / "pst_fig1_epsilon.ipynb"


def _mnist_present():
    from dpstack.companion.papers.pst import grids as stacking

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
    page = {"profile": "paper", "n_jobs": 1, "seed": 0, "epsilons": None, "n_repeats": 30}
    grids = live.check_page_parameters(page, "pst_fig1_epsilon", "profile", "n_jobs", "seed")
    assert not grids.live  # n_repeats = 30 is the committed value
    assert show.live_box_html(grids) is None
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
    # --output naming the committed notebook itself, or its own folder, is refused (only --in-place may)
    with pytest.raises(ValueError, match="would write over the committed notebook"):
        run_notebooks.destinations([a], {"x": 1}, output=Path("notebooks"))
    with pytest.raises(ValueError, match="would write over the committed notebook"):
        run_notebooks.destinations([a], {"x": 1}, output=Path("notebooks/../notebooks/a.ipynb"))


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


# ------------------------------------------------------------------ a protocol the papers leave open, as a page parameter
def _page(name, **values):
    namespace = {"profile": "paper", "n_jobs": 1, "seed": 0, **values}
    return live.check_page_parameters(namespace, name, "profile", "n_jobs", "seed")


def test_the_protocol_parameters_are_those_of_the_pages_variants_and_bad_ones_are_named():
    from dpstack.companion.variants import PRIMARY

    assert live.page_protocols("pst_fig1_epsilon") == {
        "refit": {"pst_fig1_epsilon": "protocols_pst_fig1_refit"},
        "row_scale": {"pst_fig1_epsilon": "protocols_pst_fig1_row_scale"},
    }
    for page in (
        "pst_fig1_epsilon",
        "pst_fig2_groups",
        "pst_fig3_importance",
        "pst_fig4_combiners",
        "pptl_table1_mnist",
    ):
        grids = live.page_protocols(page)
        assert set(grids) == {"refit", "row_scale"}, page
        assert grids["refit"][page] == PRIMARY[page]["refit"] and grids["row_scale"][page] == PRIMARY[page]["row_scale"]
    assert live.page_protocols("stacking_ablation") == {} and live.page_protocols("mpl_kdd") == {}
    assert _page("pst_fig1_epsilon").variant() is None  # the papers' protocol: the page's own grid
    with pytest.raises(ParameterError, match="one protocol at a time"):
        _page("pst_fig1_epsilon", refit=True, row_scale=4.0)
    with pytest.raises(ParameterError, match="row_scale must be None or a finite number > 0"):
        _page("pst_fig1_epsilon", row_scale=-2.0)
    with pytest.raises(ParameterError, match="refit must be None or a bool"):
        _page("pst_fig1_epsilon", refit="yes")
    with pytest.raises(ParameterError, match="page 'stacking_ablation' has no refit variant"):
        live.PageParameters({}, "stacking_ablation", live.page_knobs("stacking_ablation"), refit=True)
    # row_scale = 1 is the papers' protocol
    assert _page("pst_fig1_epsilon", row_scale=1.0).variant() is None


def test_a_protocol_parameter_reads_the_stored_variant_with_the_pages_columns():
    from dpstack.companion import results
    from dpstack.companion import variants as protocols

    for page in ("pst_fig4_combiners", "pptl_table1_mnist"):
        if not all(results.is_committed(n, "paper") for n in live.page_protocols(page)["row_scale"].values()):
            pytest.skip("the protocol variants are not committed")
        primary = results.load_or_run(page, profile="paper")
        grids = _page(page, row_scale=4.0)
        assert grids.variant(page) == protocols.PRIMARY[page]["row_scale"]
        assert grids.live and grids.differences(page)["protocol"] == ("rows ÷ 4", "the papers' protocol")
        frame = grids.frame(page)
        assert grids.run(page).source == "committed"
        assert list(frame.columns) == list(primary.columns)
        variant = results.load_or_run(protocols.PRIMARY[page]["row_scale"], profile="paper")
        assert len(frame) == (variant["row_scale"] == 4.0).sum() > 0
        refit = _page(page, refit=True)
        assert refit.variant(page) == protocols.PRIMARY[page]["refit"]
        assert list(refit.frame(page).columns) == list(primary.columns)
        assert refit.frame(page)["auc"].tolist() != primary["auc"].tolist()  # the refitted models, not the primary's
        if page == "pptl_table1_mnist":  # its non-private grid has no variant: the page's own result
            assert grids.variant(f"{page}_nonprivate") is None and "protocol" not in grids.differences(
                f"{page}_nonprivate"
            )
        box = show.live_box_html(grids)
        assert "Another protocol" in box and "Verdicts under this protocol" in box
        assert "protocol: rows ÷ 4 (committed: the papers&#x27; protocol)" in box  # in words, not a repr
