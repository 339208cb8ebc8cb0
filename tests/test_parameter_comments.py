"""The parameters cell of each experiment page says, per grid parameter, the value its stored results were computed with.

A reader changes a parameter by reading its comment: a comment that says "10" repeats while the stored
results have 30 misleads, and a registry name ("ruijin_transfer_groups") says nothing to a reader.
"""

import json
import re
from pathlib import Path

import pytest

from dpstack.companion import live
from dpstack.companion.results import get

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
KNOB_LINE = re.compile(r"^(\w+)\s*=\s*None\s*#\s*(.*)$")


def parameters_source(page):
    nb = json.loads((NOTEBOOKS / f"{page}.ipynb").read_text())
    cells = [c for c in nb["cells"] if c["cell_type"] == "code" and "parameters" in c["metadata"].get("tags", [])]
    return "".join(cells[0]["source"])


def comment_problems(page, source):
    """What a reader of ``page``'s parameters cell ``source`` would be misled by (an empty list: nothing)."""
    mapping = live.page_knobs(page)
    problems = []
    for line in source.splitlines():
        m = KNOB_LINE.match(line)
        if not m or m.group(1) not in mapping:
            continue
        exp, key = mapping[m.group(1)]
        value = live.short_text(live.plain(live.knobs(exp)[key].profile_value(live.COMMITTED_PROFILE)), limit=5)
        said = m.group(2).rpartition("stored: ")
        stored = live.plain(live.knobs(exp)[key].profile_value(live.COMMITTED_PROFILE))
        counted = re.fullmatch(r"all (\d+)", said[2].strip())  # a list of names said by its length
        if not said[1]:
            problems.append(f"{m.group(1)}: the comment does not say the stored value ({value})")
        elif counted and isinstance(stored, list):
            if int(counted.group(1)) != len(stored):
                problems.append(
                    f"{m.group(1)}: the comment says {said[2].strip()}, the stored results have {len(stored)}"
                )
        elif said[2].strip() != value:
            problems.append(f"{m.group(1)}: the comment says {said[2].strip()}, the stored results have {value}")
    assigned = {m.group(1) for m in re.finditer(r"^(\w+)\s*=", source, re.M)}
    problems += [f"{name}: not in the parameters cell" for name in mapping if name not in assigned]
    names = {exp for exp, _ in mapping.values()}
    for line in source.splitlines():
        comment = line.partition("#")[2]
        problems += [f"the registry name {n!r} in a comment" for n in names if re.search(rf"\b{n}\b", comment)]
    return problems


PAGES = [
    p for p in live.page_experiments() if p not in live.PAGES_WITHOUT_KNOBS and (NOTEBOOKS / f"{p}.ipynb").exists()
]


@pytest.mark.parametrize("page", PAGES)
def test_each_grid_parameter_says_its_stored_value_in_words(page):
    assert comment_problems(page, parameters_source(page)) == []


def test_the_check_catches_a_stale_value_a_missing_value_and_a_registry_name():
    source = parameters_source("pst_fig1_epsilon")
    stale = re.sub(r"(n_repeats = None .*stored: )\d+", r"\g<1>10", source)
    assert any("the stored results have" in p for p in comment_problems("pst_fig1_epsilon", stale))
    bare = re.sub(r"(epsilons = None .*); stored: .*", r"\1", source)
    assert any("does not say the stored value" in p for p in comment_problems("pst_fig1_epsilon", bare))
    counted = re.sub(r"(methods = None .*stored: ).*", r"\g<1>all 3", source)
    assert any("the stored results have 4" in p for p in comment_problems("pst_fig1_epsilon", counted))
    assert comment_problems("pst_fig1_epsilon", re.sub(r"(methods = None .*stored: ).*", r"\g<1>all 4", source)) == []
    named = source.replace("# the ε grid", "# pst_fig1_epsilon: the ε grid")
    assert any("registry name" in p for p in comment_problems("pst_fig1_epsilon", named))
    assert get("pst_fig1_epsilon").description  # the words the cells use instead of the name
