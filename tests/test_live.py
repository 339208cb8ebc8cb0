"""Every registered experiment's knobs: checked before any work, reaching the grid, and said when live."""

import hashlib
import importlib.util
import math
import os
import re
from pathlib import Path

import nbformat
import pytest

from dpstack.companion import live, results
from dpstack.companion.cli import main as cli
from dpstack.companion.parameters import ParameterError, check_parameters

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("run_notebooks", ROOT / "scripts" / "run_notebooks.py")
run_notebooks = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run_notebooks)


def _mnist_present():
    return results.get("stacking_ablation_grids").status() is None  # that grid needs MNIST alone


needs_mnist = pytest.mark.skipif(not _mnist_present(), reason="needs MNIST in DPSTACK_DATA")
TINY = dict(epsilons=[1.0], n_repeats=2, datasets=["MNIST"], methods=["PLR"])


def test_every_registered_experiment_has_knobs_and_a_function():
    assert set(results.experiments()) == set(live._EXPERIMENT_NAMES)
    for name in results.experiments():
        assert live.knobs(name), name
        assert callable(getattr(live, name))


@pytest.mark.parametrize("name", sorted(live._EXPERIMENT_NAMES))
@pytest.mark.parametrize("profile", ["quick", "paper"])
def test_the_profiles_values_pass_their_checks_and_give_the_profiles_grid(name, profile):
    """Each knob set to its profile value must pass its check and leave the grid as the profile builds it."""
    values = live.profile_values(name, profile)
    live.check_knobs(name, values)
    exp = results.get(name)
    overrides = live.grid_overrides(name, values)
    assert results._canonical(exp.grid(profile, **overrides)) == results._canonical(exp.grid(profile)), name
    assert live.differences(name, "paper", **live.profile_values(name, "paper")) == {}


def test_an_unknown_knob_fails_before_any_work_listing_the_valid_ones(monkeypatch):
    monkeypatch.setattr(results, "load_or_run", lambda *a, **k: pytest.fail("work started"))
    with pytest.raises(ParameterError, match=r"unknown parameter 'epsilon' .*epsilons, n_repeats, datasets, methods"):
        live.run("pst_fig1_epsilon", epsilon=[0.1])
    with pytest.raises(ParameterError, match="unknown parameter 'k_grid'"):
        live.pst_fig1_epsilon(k_grid=[1, 2])


@pytest.mark.parametrize(
    "name,knob,value",
    [
        ("pst_fig1_epsilon", "epsilons", [0.0]),
        ("pst_fig1_epsilon", "n_repeats", 1),
        ("pst_fig1_epsilon", "datasets", ["CIFAR"]),
        ("pst_fig1_epsilon", "methods", ["PLR", "PLR"]),
        ("pst_fig2_groups", "k_grid", [5]),
        ("ruijin_transfer_epsilon", "branch", 17),
        ("mpl_kdd", "inv_epsilons", [-1.0]),
        ("stacking_ablation_choices", "variants", ["no such variant"]),
        ("pst_fig1_epsilon", "n_jobs", 0),
    ],
)
def test_a_bad_value_names_the_parameter(name, knob, value):
    with pytest.raises(ParameterError, match=rf"parameter {knob} = "):
        live.run(name, **{knob: value})


def test_differences_name_what_a_run_changes():
    diff = live.differences("pst_fig1_epsilon", epsilons=[0.05, 0.1], n_repeats=5)
    assert diff["epsilons"] == ([0.05, 0.1], [0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, math.inf])
    assert diff["n_repeats"] == (5, 30)  # the primary result has 30 repeats
    assert set(diff) == {"epsilons", "n_repeats"}
    assert live.differences("pst_fig1_epsilon", profile="quick")["profile"] == ("quick", "paper")


@needs_mnist
def test_a_live_run_says_so_with_its_differences_wall_time_and_n_jobs():
    res = live.pst_fig1_epsilon(**TINY)
    assert res.source == "live"
    assert sorted(res.frame["epsilon"].unique()) == [1.0]
    assert res.frame["repeat"].nunique() == 2 and set(res.frame["method"]) == {"PLR"}
    text = res.description
    assert text.startswith("**Computed live**")
    for part in ("epsilons = [1.0]", "n_repeats = 2", "datasets = ['MNIST']", "n_jobs = 1", "Wall time"):
        assert part in text, part


@needs_mnist
def test_the_committed_result_is_read_when_nothing_differs():
    res = live.pst_fig1_epsilon()
    assert res.source == "committed" and res.differences == {}
    assert "Committed results of the paper profile" in res.description


def test_an_injected_unknown_notebook_parameter_fails_listing_the_pages_parameters():
    page = {"profile": "paper", "n_jobs": 1, "seed": 0}
    injected = {"In": ["", "# Parameters (papermill)\nprofile = 'paper'", "# Parameters\nepsilons = [0.05, 0.1]\n"]}
    with pytest.raises(
        ParameterError, match=r"unknown parameter 'epsilons': this page's parameters are profile, n_jobs"
    ):
        check_parameters({**page, **injected, "epsilons": [0.05, 0.1]}, "profile", "n_jobs", "seed")
    known = {"In": ["", "# Parameters\nn_jobs = 2\n"]}
    check_parameters({**page, **known}, "profile", "n_jobs", "seed")  # a declared parameter passes


def test_run_notebooks_refuses_an_unknown_parameter_before_any_kernel(monkeypatch, capsys):
    monkeypatch.setattr(run_notebooks.papermill, "execute_notebook", lambda *a, **k: pytest.fail("a kernel started"))
    page = ROOT / "notebooks" / "pst_fig1_epsilon.ipynb"
    before = page.read_bytes()
    assert run_notebooks.main([str(page), "-p", "epsilon", "0.1"]) == 2
    err = capsys.readouterr().err
    assert (
        "unknown parameter 'epsilon'; its parameters are: profile, n_jobs, seed, epsilons, n_repeats, datasets, methods"
        in err
    )
    assert page.read_bytes() == before
    # a generated page's parameters are its template's
    assert "dataset" in run_notebooks.declared_parameters(ROOT / "notebooks" / "mpl_kdd.ipynb")


def test_run_notebooks_accepts_declared_parameters(tmp_path):
    path = tmp_path / "nb.ipynb"
    cells = [nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]})]
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)
    assert run_notebooks.unknown_parameters([path], {"x": 2}) == []
    assert "unknown parameter 'y'" in run_notebooks.unknown_parameters([path], {"y": 2})[0]


@needs_mnist
def test_the_command_line_writes_a_tidy_csv_and_its_provenance(tmp_path, capsys):
    out = tmp_path / "fig1.csv"
    args = ["run", "pst_fig1_epsilon", "--epsilons", "1.0", "--repeats", "2", "--datasets", "MNIST"]
    assert cli(args + ["--methods", "PLR", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "Computed live" in printed and f"wrote {out}" in printed
    prov = results.read_provenance_json(out.with_suffix(".json").read_text())
    assert prov["csv_sha256"] == hashlib.sha256(out.read_bytes()).hexdigest()
    assert prov["differs_from_committed"]["epsilons"] == {"this run": [1.0], "committed": prov_eps()}
    frame = results.read_csv(out.read_text(), prov["columns"])
    assert len(frame) == len(prov["cells"]) == 2 and set(frame["epsilon"]) == {1.0}
    # again, from the cell cache: the same table
    first = out.read_bytes()
    assert cli(args + ["--methods", "PLR", "--out", str(out)]) == 0
    assert out.read_bytes() == first


def prov_eps():
    return live.profile_values("pst_fig1_epsilon")["epsilons"]


def test_the_command_line_refuses_unknown_options_and_bad_values(capsys, tmp_path):
    assert cli(["run", "pst_fig1_epsilon", "--epsilon", "0.1", "--out", str(tmp_path / "x.csv")]) == 2
    assert "unknown option(s) --epsilon 0.1 for pst_fig1_epsilon; its options are: --epsilons, --repeats" in (
        capsys.readouterr().err
    )
    assert cli(["run", "pst_fig1_epsilon", "--repeats", "1", "--out", str(tmp_path / "x.csv")]) == 2
    assert "parameter n_repeats = 1" in capsys.readouterr().err
    assert not (tmp_path / "x.csv").exists()
    assert cli(["run", "no_such_page"]) == 2


def test_the_command_line_lists_every_experiment_and_its_knobs(capsys):
    assert cli(["run", "--list"]) == 0
    text = capsys.readouterr().out
    for name in results.experiments():
        assert f"  {name}:" in text
    assert "--epsilons" in text and "--k-grid" in text and "--n-parties" in text


def test_a_page_with_knobs_checks_them_and_refuses_injected_unknown_names():
    page = {"profile": "paper", "n_jobs": 1, "seed": 0, "epsilons": [0.05, 0.1], "n_repeats": None}
    values = live.check_page_parameters(page, "pst_fig1_epsilon", "profile", "n_jobs", "seed")
    assert values == {"epsilons": [0.05, 0.1], "n_repeats": None}
    with pytest.raises(ParameterError, match="parameter n_repeats = 1"):
        live.check_page_parameters({**page, "n_repeats": 1}, "pst_fig1_epsilon", "profile", "n_jobs", "seed")
    with pytest.raises(ParameterError, match="parameter n_jobs = 0"):
        live.check_page_parameters({**page, "n_jobs": 0}, "pst_fig1_epsilon", "profile", "n_jobs", "seed")
    injected = {**page, "In": ["", "# Parameters\nk_grid = [1, 2]\n"], "k_grid": [1, 2]}
    with pytest.raises(ParameterError, match=r"unknown parameter 'k_grid': this page's parameters are profile, n_jobs"):
        live.check_page_parameters(injected, "pst_fig1_epsilon", "profile", "n_jobs", "seed")


# ----------------------------------------------------------------------------- --out: checked first, written as a pair
def test_an_unusable_out_path_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    def no_work(*args, **kwargs):
        raise AssertionError("the grid was computed before --out was checked")

    monkeypatch.setattr(results, "compute", no_work)
    base = ["run", "pst_fig1_epsilon", "--epsilons", "1.0", "--repeats", "2", "--datasets", "MNIST"]
    # a .json CSV would be overwritten by its own provenance
    assert cli(base + ["--out", str(tmp_path / "table.json")]) == 2
    assert "name a file ending in .csv" in capsys.readouterr().err
    (tmp_path / "folder.csv").mkdir()
    assert cli(base + ["--out", str(tmp_path / "folder.csv")]) == 2
    assert "is a folder" in capsys.readouterr().err
    (tmp_path / "plain").write_text("a file, not a folder")
    assert cli(base + ["--out", str(tmp_path / "plain" / "x.csv")]) == 2
    assert "is not a folder" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder.csv", "plain"]


def test_the_csv_and_its_provenance_are_written_as_a_pair(tmp_path, monkeypatch):
    import errno

    from dpstack.companion import run as main_module

    csv_path, json_path = main_module.output_paths(tmp_path / "t.csv")
    results.write_files([(json_path, b"old json"), (csv_path, b"old csv")])
    calls = []
    real_fsync = os.fsync

    def disk_full_on_the_second_file(fd):
        calls.append(fd)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(results.os, "fsync", disk_full_on_the_second_file)
    with pytest.raises(OSError, match="No space left"):
        results.write_files([(json_path, b"new json"), (csv_path, b"new csv")])
    # both old, and no temporary file left behind
    assert (json_path.read_bytes(), csv_path.read_bytes()) == (b"old json", b"old csv")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv", "t.json"]
    # an orphan of a killed writer of this name is removed by the next write; other files are not touched
    orphan = tmp_path / ".t.csv.nohost.1.0123abcd.tmp"
    orphan.write_text("partial")
    os.utime(orphan, (0, 0))  # older than an hour, from another host
    other = tmp_path / ".unrelated.nohost.1.0123abcd.tmp"
    other.write_text("not ours")
    os.utime(other, (0, 0))
    monkeypatch.setattr(results.os, "fsync", real_fsync)
    results.write_files([(json_path, b"new json"), (csv_path, b"new csv")])
    assert (json_path.read_bytes(), csv_path.read_bytes()) == (b"new json", b"new csv")
    assert not orphan.exists() and other.exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["pst_fig1_epsilon", "--epsilons", "1e-320"],
            r"epsilons = \[1e-320\]: expected a non-empty list of numbers >= 1e-300",
        ),
        (
            ["pst_fig1_epsilon", "--repeats", "100000000"],
            r"n_repeats = 100000000: expected an integer from 2 .* to 1,000",
        ),
        (["pst_fig2_groups", "--k-grid", "2", "100000"], r"k_grid = \[2, 100000\]: expected .* integers from 1 to 100"),
        (["ruijin_transfer_groups", "--k-grid", "2", "51"], r"k_grid = \[2, 51\]: expected .* integers from 1 to 50"),
        (
            ["pst_fig1_epsilon", "--repeats", "1000", "--max-cells", "100"],
            r"the grid has [\d,]+ cells, more than the ceiling of 100; pass --max-cells",
        ),
    ],
)
def test_values_the_estimators_or_the_machine_cannot_take_are_refused_before_any_work(
    args, message, capsys, monkeypatch
):
    def no_work(*a, **k):
        raise AssertionError("the grid was computed before its parameters were checked")

    monkeypatch.setattr(results, "compute", no_work)
    assert cli(["run", *args]) == 2
    assert re.search(message, capsys.readouterr().err)
