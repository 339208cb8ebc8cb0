"""The notebooks' one parameter validator: vacuous or malformed values stop the run, naming the parameter."""

import pytest

from dpstack.companion import live
from dpstack.companion.parameters import ParameterError, check_parameters


@pytest.mark.parametrize(
    "name,value",
    [
        ("n_grid", [1]),
        ("n_grid", [25]),
        ("n_draws", 0),
        ("epsilons", 0),
        ("epsilons", []),
        ("epsilons", [0.0]),
        ("profile", "full"),
        ("n_repeats", 1),
        ("lam", -1.0),
        ("importance", [0.5, 0.6]),
        ("n_jobs", 0),
        ("seed", 1.5),
        ("fit_on", "everything"),
    ],
)
def test_unusable_values_name_the_parameter(name, value):
    with pytest.raises(ParameterError, match=rf"parameter {name} = "):
        check_parameters({name: value}, name)


def test_the_defaults_of_the_pages_pass():
    check_parameters(
        {
            "epsilons": [0.1, 0.5, 1.0, 5.0, float("inf")],
            "n_grid": [25, 50, 100, 150, 250],
            "n_repeats": 10,
            "lam": 0.01,
            "n_draws": 300,
            "seed": 0,
        },
        "epsilons",
        "n_grid",
        "n_repeats",
        "lam",
        "n_draws",
        "seed",
    )
    check_parameters({"profile": "quick", "n_jobs": 1, "seed": 0}, "profile", "n_jobs", "seed")


def test_every_problem_is_listed_and_unknown_names_are_refused():
    with pytest.raises(ParameterError, match="n_draws.*epsilons"):
        check_parameters({"n_draws": 0, "epsilons": 0}, "n_draws", "epsilons")
    with pytest.raises(ParameterError, match="'seed' is missing"):
        check_parameters({}, "seed")
    with pytest.raises(KeyError, match="no validation rule"):
        check_parameters({"x": 1}, "x")


def test_every_notebook_validates_exactly_its_parameters():
    """The cell after each parameters cell checks every parameter the notebook declares."""
    import ast
    from pathlib import Path

    import nbformat

    notebooks = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
    assert notebooks
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        idx = [i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", [])]
        if not idx:  # a page without parameters (nothing to re-run it with)
            continue
        assert len(idx) == 1, f"{path.name}: one parameters cell expected"
        declared = [
            t.id
            for node in ast.parse(nb.cells[idx[0]].source).body
            if isinstance(node, ast.Assign)
            for t in node.targets
            if isinstance(t, ast.Name)
        ]
        check = nb.cells[idx[0] + 1].source
        calls = [
            n
            for n in ast.walk(ast.parse(check))
            if isinstance(n, ast.Call)
            and (
                getattr(n.func, "id", "") == "check_parameters"
                or getattr(n.func, "attr", "") == "check_page_parameters"
            )
        ]
        assert calls, (
            f"{path.name}: the cell after the parameters cell must call check_parameters or live.check_page_parameters"
        )
        call = calls[0]
        checked = [a.value for a in call.args[2 if getattr(call.func, "attr", "") == "check_page_parameters" else 1 :]]
        if getattr(call.func, "attr", "") == "check_page_parameters":
            # the page's knobs: every one declared with None (the profile's value) unless the page fixes it
            defaults = {}
            exec(nb.cells[idx[0]].source, {}, defaults)
            page = eval(compile(ast.Expression(call.args[1]), path.name, "eval"), {}, defaults)
            knob_names = list(live.page_knobs(page))
            assert not set(checked) & set(knob_names), f"{path.name}: a knob is also checked as a common parameter"
            checked = checked + knob_names + list(live.page_protocols(page))
            assert len(set(declared)) == len(declared), f"{path.name}: a parameter is declared twice"
            assert sorted(checked) == sorted(declared), f"{path.name}: checks {checked}, declares {declared}"
        else:
            assert checked == declared, f"{path.name}: checks {checked}, declares {declared}"


def test_every_experiment_page_exposes_its_grids_knobs():
    """Each page rendering registered experiments declares its knobs (+ profile, n_jobs, seed), None by default."""
    import ast
    from pathlib import Path

    import nbformat

    root = Path(__file__).resolve().parents[1]
    not_yet = set(live.PAGES_WITHOUT_KNOBS)  # its grids are run by sensitivity_page, which takes no knobs
    for page in live.page_experiments():
        if page in not_yet:
            continue
        nb = nbformat.read(root / "notebooks" / f"{page}.ipynb", as_version=4)
        cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
        values = {}
        exec(cell.source, {}, values)
        expected = set(live.page_knobs(page)) | set(live.page_protocols(page)) | {"profile", "n_jobs", "seed"}
        assert expected <= set(values), f"{page}: missing parameters {sorted(expected - set(values))}"
        extra = set(values) - expected - {"dataset"}
        assert not extra, f"{page}: parameters that are no knob of its grids: {sorted(extra)}"
        fixed = {"lam", "fit_on"} if page.startswith("mpl_") else set()  # MPL: the paper's λ and PCA rows, stated
        for name in (set(live.page_knobs(page)) | set(live.page_protocols(page))) - fixed:
            assert values[name] is None, f"{page}: knob {name} defaults to {values[name]!r}, not None"
        check = nb.cells[nb.cells.index(cell) + 1].source
        assert any(
            isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "check_page_parameters"
            for n in ast.walk(ast.parse(check))
        ), f"{page}: its check cell does not call live.check_page_parameters"
