"""The "Try it" boxes of the experiment and theorem pages (dpstack.companion.try_it)."""

import ast
import json
from pathlib import Path

import pytest
import yaml
from papermill.cli import _resolve_type

from dpstack.companion import live
from dpstack.companion import try_it as pages
from dpstack.companion.registry import theorem_pages
from dpstack.companion.run import _parser

ROOT = Path(__file__).resolve().parents[1]
THEOREM_PAGES = set(theorem_pages())
FOUNDATION_PAGES = {"plr", "audit", "datasets"}
ALTERNATIVES_PAGES = {"accounting_checked"}
# Calls that take seconds are compiled and checked, not run.
SLOW = {"mpl_theorem4"}


def _value(node):
    """A parameter's literal value; ``float("inf")`` (the non-private ε) allowed besides literals."""
    return eval(compile(ast.Expression(node), "<parameter>", "eval"), {"__builtins__": {}, "float": float})


def notebook_parameters(page):
    """{name: value} of the notebook's papermill ``parameters`` cell."""
    nb = json.loads((ROOT / "notebooks" / f"{page}.ipynb").read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            tree = ast.parse("".join(cell["source"]))
            return {node.targets[0].id: _value(node.value) for node in tree.body if isinstance(node, ast.Assign)}
    return {}


def call_keywords(code):
    """The literal keyword arguments of the last call in ``code``, by name."""
    calls = [node for node in ast.walk(ast.parse(code)) if isinstance(node, ast.Call)]
    out = {}
    for call in calls:
        for kw in call.keywords:
            try:
                out[kw.arg] = ast.literal_eval(kw.value)
            except ValueError:
                pass
    return out


def test_every_experiment_and_theorem_page_has_suggestions_and_ends_with_its_box():
    expected = set(live.page_experiments()) | THEOREM_PAGES | FOUNDATION_PAGES | ALTERNATIVES_PAGES
    assert set(pages.TRY_IT) == expected
    for page in expected:
        nb = json.loads((ROOT / "notebooks" / f"{page}.ipynb").read_text(encoding="utf-8"))
        last = "".join(nb["cells"][-1]["source"])
        assert f'try_it("{page}")' in last, f"{page}: the last cell is not its 'Try it' box"
        assert 1 <= len(pages.try_it_suggestions(page)) <= 2


@pytest.mark.parametrize("page", sorted(pages.TRY_IT))
def test_the_papermill_parameters_exist_and_the_python_call_makes_the_same_change(page):
    params = notebook_parameters(page)
    for s in pages.try_it_suggestions(page):
        assert set(s.notebook) <= set(params), f"{page}: {set(s.notebook) - set(params)} are not page parameters"
        for name, value in s.notebook.items():
            assert value != params[name], f"{page}: -p {name} {value!r} changes nothing"
            assert type(value) is type(params[name]), f"{page}: -p {name} has the wrong type"
        kwargs = call_keywords(s.python)
        after = {**params, **s.notebook}
        for name, value in kwargs.items():
            page_name = "seed" if name == "random_state" else name
            if page_name in after and not s.command:
                assert value == after[page_name], f"{page}: the Python call's {name}={value!r} is not the page's"
        for name, value in s.notebook.items():
            assert kwargs.get(name) == value or repr(value) in s.python, f"{page}: the call does not set {name}"
        compile(s.python, f"<try it: {page}>", "exec")
        if s.notebook:  # papermill reads the command's values back as the page's values
            argv = pages._papermill(page, s.notebook).split(" ", 3)[3]
            read = {}
            for flag in argv.split(" -")[0:]:
                flag = flag.lstrip("-")
                kind, _, rest = flag.partition(" ")
                if kind == "p":
                    name, _, text = rest.partition(" ")
                    read[name] = _resolve_type(text)
                else:
                    read.update(yaml.safe_load(rest.strip('"')))
            assert read == s.notebook


@pytest.mark.parametrize("page", sorted(p for p in pages.TRY_IT if any(s.command for s in pages.TRY_IT[p])))
def test_the_live_calls_are_valid_knobs_and_the_shell_command_is_the_same_call(page):
    for s in pages.try_it_suggestions(page):
        tree = ast.parse(s.python)
        call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute))
        name = call.func.attr
        assert name in live.page_experiments()[page], f"{page}: {name} is not one of the page's experiments"
        kwargs = call_keywords(s.python)
        seed = kwargs.pop("seed", 0)
        live.check_knobs(name, kwargs)  # raises ParameterError naming a bad knob
        argv = s.command.split()[4:]
        args = _parser(name).parse_args(argv)
        assert args.name == name and args.seed == seed
        given = {k: v for k, v in vars(args).items() if k in live.knobs(name) and v is not None}
        assert {k: list(v) if isinstance(v, (list, tuple)) else v for k, v in given.items()} == {
            k: list(v) if isinstance(v, (list, tuple)) else v for k, v in kwargs.items()
        }
        # The page's own parameters reach the same experiment: seed and, on the MPL pages, lam and fit_on.
        for key, value in s.notebook.items():
            assert key == "seed" or kwargs[key] == value


@pytest.mark.parametrize("page", sorted((THEOREM_PAGES | {"plr", "audit"}) - SLOW))
def test_the_theorem_pages_python_calls_run(page):
    for s in pages.try_it_suggestions(page):
        exec(s.python, {})


def test_the_box_shows_every_suggestion_and_an_unknown_page_fails_naming_it():
    html = pages.try_it("mpl_kdd").data
    assert html.count("papermill notebooks/mpl_kdd.ipynb") == 2
    assert "-p lam 0.01" in html and "live.mpl_kdd(lam=0.01)" in html and "--lam 0.01" in html
    assert "-p fit_on private" in html
    assert '-y "importance: [0.8, 0.15, 0.05]"' in pages.try_it("pst_privacy").data.replace("&quot;", '"')
    with pytest.raises(ValueError, match="page='nope'"):
        pages.try_it("nope")


def test_a_page_without_its_data_shows_the_papers_printed_numbers_and_statements_and_its_box():
    from dpstack.companion.paper_values import MPL_CLAIMS, MPL_HAR
    from dpstack.companion.papers.mpl import pages as mpl_report

    note = mpl_report.absent_data_note("har", "Data absent: uci_har/X_train.txt is missing.")
    for (method, _), value in MPL_HAR["values"].items():
        assert f"<td>{method}</td><td>{value:.2f}</td>" in note
    assert "vote becomes useless even at 1/ε = 0.1" in note
    assert "dpstack-try-it" in note
    url = mpl_report.absent_data_note("url", "Data absent: url/Day0.svm is missing.")
    assert "prints no numbers for Figure 4" in url
    for words in MPL_CLAIMS["url"]["claims"].values():
        assert words in url.replace("&#x27;", "'")


def verdict_questions_without_verdicts(try_it, has_verdicts):
    """Pages whose "Try it" asks about verdicts but show none (``has_verdicts(page)`` says whether one does)."""
    return sorted(
        page
        for page, suggestions in try_it.items()
        if any("verdict" in s.question.lower() for s in suggestions) and not has_verdicts(page)
    )


def page_shows_verdicts(page):
    """Whether the executed page shows verdicts: a verdict table or box, or a table cell that is a verdict."""
    import re

    nb = json.loads((ROOT / "notebooks" / f"{page}.ipynb").read_text(encoding="utf-8"))
    shown = "".join(
        "".join(output.get("data", {}).get("text/html", ""))
        for cell in nb["cells"]
        for output in cell.get("outputs", [])
    )
    return "dpstack-verdict" in shown or bool(re.search(r"<td[^>]*>\s*(?:supported|contradicted|inconclusive)", shown))


def test_try_it_asks_about_verdicts_only_on_pages_that_show_them():
    assert verdict_questions_without_verdicts(pages.TRY_IT, page_shows_verdicts) == []
    # the planted question: "Do the verdicts survive …?" on the end-to-end page, which judges no claim
    planted = {**pages.TRY_IT, "end_to_end_private": [pages.Suggestion("Do the verdicts survive?", {}, "")]}
    assert verdict_questions_without_verdicts(planted, page_shows_verdicts) == ["end_to_end_private"]
