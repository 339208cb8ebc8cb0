"""One declaration per experiment: the registries derive from the folders' ``experiments.py``."""

import json
from pathlib import Path

import pytest

from dpstack.companion import live, numbering, results, spec, try_it, variants

ROOT = Path(__file__).resolve().parents[1]


def test_every_declared_result_is_registered_once_in_the_declared_order():
    names = [s.name for s in spec.experiment_specs()]
    assert results.experiments()[: len(names)] == names and len(set(names)) == len(names)


def test_every_folder_with_experiments_is_discovered():
    found = {m.__name__ for m in spec.declarations()}
    on_disk = {
        ".".join(p.relative_to(ROOT).with_suffix("").parts)
        for p in (ROOT / "dpstack" / "companion").rglob("experiments.py")
    }
    assert found == on_disk and "dpstack.companion.chapters.experiments" in found


def test_the_registries_read_the_declarations():
    for s in spec.experiment_specs():
        assert list(live.knobs(s.name)) == [k.name for k in s.knobs]
        assert callable(getattr(live, s.name))
        if s.draws:
            assert variants.DRAWS[s.name] == dict(s.draws)
        for t in s.try_it:
            assert any(x.question == t.question for x in try_it.TRY_IT[s.page])
    assert set(variants.PRIMARY) == {s.name for s in spec.experiment_specs() if s.protocol is not None}
    assert numbering.PAPER_ITEMS == spec.paper_items()


def test_a_variant_falls_back_to_its_primary_profile_then_to_the_knob_default():
    primary = spec.ExperimentSpec(
        "toy",
        list,
        len,
        spec.both({"n": 2}, {"n": 5}),
        1,
        knobs=(
            spec.Knob("n", ("check", "expected"), "n", spec.const(1)),
            spec.Knob("m", ("c", "e"), "m", spec.const(7)),
        ),
        variants=(
            spec.Variant("refit", "toy_refit", 2, list, spec.both({"n": 3}, {}), defaults={"m": spec.const(8)}),
            spec.Variant("row_scale", "toy_rows", 3, list, spec.both({}, {"row_scales": [4.0]})),
            spec.Variant("another_seed", "toy_seed", 4, extra={"m": 9}),
        ),
    )
    refit, rows, seed = {s.name: s for s in primary.expanded()[1:]}.values()
    n, m = refit.knobs
    assert (n.default("quick"), n.default("paper"), m.default("paper")) == (2, 5, 8)  # own profile is live's
    assert [k.name for k in rows.knobs] == ["row_scales", "n", "m"] and rows.knobs[0].default("paper") == [4.0]
    assert seed.seed == spec.SECOND_SEED and seed.profiles["paper"] == {"n": 5, "m": 9}
    assert (refit.page, refit.variant_of) == (spec.SENSITIVITY_PAGE, ("toy", "refit"))
    # PPTL Figure 4's variants run the MNIST panel only (a declared default, not the primary's)
    assert live.knobs("protocols_pptl_fig4_refit")["datasets"].profile_value("paper") == ("MNIST",)


def test_a_result_declared_twice_is_refused(monkeypatch):
    class Folder:
        EXPERIMENTS = (spec.experiment_specs()[0],)

    monkeypatch.setattr(spec, "declarations", lambda: (Folder, Folder))
    spec.experiment_specs.cache_clear()
    try:
        with pytest.raises(RuntimeError, match="declared twice"):
            spec.experiment_specs()
    finally:
        monkeypatch.undo()
        spec.experiment_specs.cache_clear()


def test_no_committed_result_depends_on_a_declaration():
    for path in (ROOT / "results").glob("*/*.json"):
        code = json.loads(path.read_text(encoding="utf-8")).get("code", {})
        assert not [k for k in code if k.endswith(("/experiments.py", "/spec.py"))], path
