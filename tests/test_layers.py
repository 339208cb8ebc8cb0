"""The package's layers, read from the source: who may import whom, no import circles, few deferred imports.

The algorithms (the estimators, mechanisms, solver, ledger, release, theory: every module of
dpstack outside the three subpackages below), then :mod:`dpstack.datasets`, then
:mod:`dpstack.audit`, then :mod:`dpstack.companion` (the book's machinery). A layer imports only
the layers before it. Inside the companion, the modules a committed result is computed by (its
grids, the runner, the open choices, the statistics) import no presentation module, so editing a
page, a claim or a table never makes a result stale. The graph of every dpstack import (at module
top and inside functions) has no circle, and imports deferred into functions stay within a
budget. The imports are parsed by ``scripts/architecture.py`` (nothing is imported).
"""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("architecture", ROOT / "scripts" / "architecture.py")
architecture = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(architecture)

#: The layers, lowest first (a module's layer is the first prefix it matches; the rest is the algorithms).
LAYERS = ("dpstack.datasets", "dpstack.audit", "dpstack.companion")
#: The companion modules a committed result may be computed by (its grids and what they share).
COMPUTING = (
    "dpstack.companion.runner",
    "dpstack.companion.stats",
    "dpstack.companion.papers.open_choices",
    "dpstack.companion.papers.pst.grids",
    "dpstack.companion.papers.pst.alternatives",
    "dpstack.companion.papers.pst.honest",
    "dpstack.companion.papers.mpl.alternatives",
    "dpstack.companion.papers.pptl.alternatives",
    "dpstack.companion.papers.pptl.grids",
    "dpstack.companion.papers.mpl.grids",
    "dpstack.companion.chapters.end_to_end",
    "dpstack.companion.chapters.plr",
)
#: Imports of dpstack modules deferred into a function. Most left are in the computing modules and
#: the algorithms, where moving an import changes the code a committed result records (a recompute),
#: and in the command line's subcommands. The audit defers none. The two registries that imported each
#: page's grid module on first use (``results._load_builtins``, ``live._build``) read the experiments'
#: declarations instead (:mod:`dpstack.companion.spec`, which finds each folder's ``experiments.py``),
#: and ``live`` imports the results and variants at its top: 66 → 40.
FUNCTION_LEVEL_BUDGET = 40


def layer(module):
    """0 for the algorithms (and the package's root), then 1, 2, 3 for LAYERS."""
    for i, prefix in enumerate(LAYERS, start=1):
        if module == prefix or module.startswith(prefix + "."):
            return i
    return 0


def upward_imports(edges):
    """(importer, imported) pairs where a module imports a later layer than its own."""
    bad = []
    for src, dst, *_ in edges:
        if src == "dpstack" and dst.startswith("dpstack.datasets"):
            continue  # the package re-exports the datasets' loaders
        if layer(dst) > layer(src):
            bad.append((src, dst))
    return sorted(set(bad))


def computing_leaks(edges, computing=COMPUTING):
    """(computing module, companion module outside COMPUTING) pairs in the computing modules' closure."""
    graph = {}
    for src, dst, *_ in edges:
        graph.setdefault(src, set()).add(dst)
    bad = set()
    for start in computing:
        seen, todo = set(), [start]
        while todo:
            m = todo.pop()
            if m in seen:
                continue
            seen.add(m)
            todo.extend(graph.get(m, ()))
        bad |= {(start, m) for m in seen if layer(m) == 3 and m not in computing and m != "dpstack.companion"}
    return sorted(bad)


@pytest.fixture(scope="module")
def edges():
    return architecture.imports(ROOT)


def test_no_layer_imports_a_later_one(edges):
    assert upward_imports(edges) == []


def test_the_computing_modules_import_no_presentation_module(edges):
    assert computing_leaks(edges) == []


def test_the_computing_modules_are_what_the_committed_results_record():
    """Every companion file a committed result's provenance names is a computing module."""
    import json

    named = set()
    for path in (ROOT / "results").glob("*/*.json"):
        for key in json.loads(path.read_text(encoding="utf-8")).get("code", {}):
            if key.startswith("dpstack/companion/"):
                named.add(key.removesuffix(".py").replace("/", "."))
    assert named and named <= set(COMPUTING), sorted(named - set(COMPUTING))


def test_no_import_circle(edges):
    assert architecture.cycles(edges) == []


def test_imports_deferred_into_functions_stay_within_the_budget(edges):
    assert architecture.function_level_imports(edges) <= FUNCTION_LEVEL_BUDGET


def test_no_private_name_is_imported_across_modules(edges):
    assert architecture.private_imports(ROOT, edges) == []


def test_one_command_line_for_the_companion_and_one_for_the_datasets():
    assert architecture.entry_points(ROOT) == ["dpstack.companion.__main__", "dpstack.datasets.__main__"]


# ------------------------------------------------------------------ the checks catch what they must
def _edge(src, dst, top=True):
    return (src, dst, top, (), 1)


def test_a_planted_upward_import_is_caught():
    planted = [
        _edge("dpstack.linear", "dpstack.companion.show"),
        _edge("dpstack.audit.checks", "dpstack.companion.results"),
    ]
    assert upward_imports(planted) == [
        ("dpstack.audit.checks", "dpstack.companion.results"),
        ("dpstack.linear", "dpstack.companion.show"),
    ]
    assert upward_imports([_edge("dpstack.datasets.mnist", "dpstack.audit.exact", top=False)]) != []
    assert (
        upward_imports([_edge("dpstack", "dpstack.datasets"), _edge("dpstack.companion.show", "dpstack.linear")]) == []
    )


def test_a_planted_circle_is_caught(edges):
    planted = [*edges, _edge("dpstack.companion.rule", "dpstack.companion.show", top=False)]
    found = architecture.cycles(planted)
    assert len(found) == 1 and {"dpstack.companion.rule", "dpstack.companion.show"} <= set(found[0])


def test_a_grid_importing_a_page_module_is_caught(edges):
    planted = [*edges, _edge("dpstack.companion.papers.pst.grids", "dpstack.companion.papers.pst.pages", top=False)]
    leaks = computing_leaks(planted)
    assert ("dpstack.companion.papers.pst.grids", "dpstack.companion.papers.pst.pages") in leaks
