"""One declaration per experiment, in its paper's folder: what every registry of the book derives from.

A committed result (:mod:`dpstack.companion.results`) is declared once, as an
:class:`ExperimentSpec` in the ``experiments.py`` of its folder (``papers/<paper>/experiments.py``
for a paper's figures and tables, ``chapters/experiments.py`` for the pages beyond them). The
declaration names:

* the grid: the function building the cells and the cell function (by reference, from the
  folder's ``grids.py``: the only computing module), the table's tidying function, the profiles'
  parameters, the data it needs, the root seed;
* its knobs (:class:`Knob`: the grid function's keyword, the rule it is checked by, from
  :mod:`dpstack.companion.parameters`, and its value in each profile when the profile does not
  give it);
* its protocol variants as named overrides (:class:`Variant`: refit, rows ÷ s, another seed and
  data draw), each itself a committed result;
* what one repeat draws anew (``draws``), the "Try it" lines of its page (:class:`TryIt`) and
  where the book lists it (``order``).

A folder's ``experiments.py`` holds ``EXPERIMENTS`` (its declarations, each once) and, for a
paper, ``ITEMS`` (the paper's tables and figures in its order, :class:`PaperItem`, with the page
reproducing each). :func:`declarations` finds them by walking the folders: no list of papers or
experiments is written anywhere else. From them :mod:`dpstack.companion.results` registers the
results, :mod:`dpstack.companion.live` builds the knobs and one function per experiment,
:mod:`dpstack.companion.variants` its ``PRIMARY`` and ``DRAWS``, :mod:`dpstack.companion.try_it`
the "Try it" boxes of the experiment pages and :mod:`dpstack.companion.numbering` the papers' items.

The declarations are read by the registries only: no computing module imports them, so editing
one never makes a committed result stale (its provenance records the grid module's closure).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import pkgutil
from dataclasses import dataclass, field, replace
from typing import Callable, Mapping, NamedTuple

from dpstack.companion import chapters as _chapters
from dpstack.companion import papers as _papers
from dpstack.companion.parameters import positive_reals
from dpstack.datasets import DatasetNotFoundError

__all__ = [
    "PRIMARY_REPEATS",
    "PAPER_REPEATS",
    "SECOND_SEED",
    "SECOND_DATA_DRAW",
    "DRAWN_DATASETS",
    "SENSITIVITY_PAGE",
    "Knob",
    "TryIt",
    "Variant",
    "ExperimentSpec",
    "PaperItem",
    "both",
    "const",
    "from_profiles",
    "by_name",
    "row_scales",
    "transformed",
    "another_draw",
    "needs",
    "dataset_status",
    "declarations",
    "experiment_specs",
    "paper_items",
]

#: The repeats of every primary result of the papers' figures and tables (paper profile).
PRIMARY_REPEATS = 30

#: The repeats the papers report, and those of the refit and row-scale variants (declared explicitly:
#: their knobs then say so, not the primary results' count).
PAPER_REPEATS = 10

#: The root seed of the protocol variant "another seed" (every primary result uses 0).
SECOND_SEED = 1

#: The variant "another seed" draws the data anew too: a cell of a drawn data set (MNIST's images,
#: the RUIJIN-like cohort) with data draw ``d`` (``data_seed``, 0 when absent) draws ``d + SECOND_DATA_DRAW``.
SECOND_DATA_DRAW = 1000

#: The data sets whose draw a seed selects (NEWS20's split is the archive's; MPL's data is the
#: whole data set, its split into parties is drawn from the root seed).
DRAWN_DATASETS = ("MNIST", "RUIJIN")

#: The page that renders every protocol variant.
SENSITIVITY_PAGE = "protocol_sensitivity"

#: The kinds of protocol variant a result may declare.
VARIANT_KINDS = ("refit", "row_scale", "another_seed")


# ------------------------------------------------------------------------------------------ helpers
def both(quick, paper):
    """The profiles ``{"quick": quick, "paper": paper}``."""
    return {"quick": quick, "paper": paper}


def const(value):
    """A knob's value in every profile: ``value``."""
    return lambda profile: value


def from_profiles(table, key):
    """A knob's value in a profile: ``table[profile][key]`` (a grid module's ``PROFILES``)."""
    return lambda profile: table[profile][key]


def by_name(variants):
    """A knob's ``to_grid`` mapping variant names to their options (``variants[name]``)."""
    return lambda names: {k: variants[k] for k in names}


def transformed(cells_fn, transform):
    """``cells_fn`` whose cells pass through ``transform`` (e.g. the PST grids' ``redrawn_cells``).

    The wrapper keeps the module of ``cells_fn``: a result records the grid module's closure, not
    this one.
    """

    @functools.wraps(cells_fn)
    def cells(*args, **kwargs):
        return transform(cells_fn(*args, **kwargs))

    return cells


def another_draw(cells_fn):
    """``cells_fn`` with every drawn data set's draw moved by :data:`SECOND_DATA_DRAW`."""

    @functools.wraps(cells_fn)
    def cells(*args, **kwargs):
        return [
            dict(c, data_seed=SECOND_DATA_DRAW + int(c.get("data_seed", 0)))
            if c.get("dataset") in DRAWN_DATASETS
            else c
            for c in cells_fn(*args, **kwargs)
        ]

    return cells


def _data_status(require, *datasets):
    """``None`` when ``require(*datasets)`` loads, else its message (the page says the data is absent)."""
    try:
        require(*datasets)
    except DatasetNotFoundError as err:
        return str(err)
    return None


def needs(require, *default):
    """The status of a grid that reads ``default`` (or the ``datasets`` / ``dataset`` it is given).

    Only the data the grid uses is required: a grid over the RUIJIN-like cohort alone does not
    ask for MNIST. Datasets outside ``default`` (synthetic ones) need no files.
    """

    def status(datasets=None, dataset=None, **grid):
        chosen = tuple(datasets) if datasets is not None else (dataset,) if dataset is not None else default
        chosen = tuple(d for d in chosen if d in default)
        return _data_status(require, *chosen) if chosen else None

    return status


def _status_of(data_status, dataset, **grid):
    return data_status(dataset)


def dataset_status(data_status, dataset):
    """The status of a grid over one fixed data set: ``data_status(dataset)``, whatever the grid's parameters."""
    return functools.partial(_status_of, data_status, dataset)


# ------------------------------------------------------------------------------------------ declarations
@dataclass(frozen=True)
class Knob:
    """One parameter of an experiment's grid, declared once.

    Attributes
    ----------
    name : str
        The keyword of the grid function (and of the page, the command line, :func:`dpstack.companion.live.run`).
    rule : (callable, str)
        ``(check, expected)``: a rule of :mod:`dpstack.companion.parameters` (``RULES[...]`` or one
        of its builders, e.g. ``choices(...)``).
    help : str
        One line for ``--list``, the docstrings and the page on re-running the book.
    default : callable or None
        ``default(profile)`` → the value the profile uses when its parameters do not name the knob
        (:func:`const`, :func:`from_profiles`); None: every profile names it.
    to_grid : callable or None
        Maps the knob's value to the grid function's argument (e.g. variant names → their options).
    """

    name: str
    rule: tuple
    help: str
    default: Callable | None = None
    to_grid: Callable | None = None


class TryIt(NamedTuple):
    """One "Try it" line of an experiment's page: a question, the page's parameters it changes, the run's knobs."""

    question: str
    notebook: dict = {}
    knobs: dict = {}


class PaperItem(NamedTuple):
    """One table or figure of one paper, numbered as the book numbers it.

    ``number`` is the book's number (PST: the arXiv version's; a panel as ``"3(a)"`` when the
    panels of one figure are reproduced on different pages); ``ijcai`` is the IJCAI version's
    number of a PST item (empty for PPTL and MPL); ``how`` is a key of
    :data:`dpstack.companion.numbering.HOW`.
    """

    paper: str
    kind: str
    number: str
    shows: str
    page: str
    how: str
    ijcai: str = ""


@dataclass(frozen=True)
class Variant:
    """A protocol variant of a declared result: the result's grid under a named override, committed on its own.

    Attributes
    ----------
    kind : {"refit", "row_scale", "another_seed"}
    name : str
        The committed result's name.
    order : int
        Where the book lists it (see :attr:`ExperimentSpec.order`).
    cells : callable or None
        The variant's grid function (None for ``"another_seed"``: the primary's, each drawn data set
        moved by :data:`SECOND_DATA_DRAW`).
    profiles : mapping or None
        Its profiles (None for ``"another_seed"``: the primary's, with ``extra`` on top).
    finish, status : callable or None
        As the primary's when None.
    description : str
        One line for ``list`` (``"another_seed"``: derived from the primary's).
    knobs : tuple of Knob or None
        Its knobs; None: the primary's (a profile value the variant does not give falls back to the
        primary's), with ``row_scales`` first for ``"row_scale"``.
    defaults : mapping
        Knob name → ``default(profile)`` replacing the primary's value (with ``knobs`` None).
    extra : mapping
        ``"another_seed"``: parameters added to every profile of the primary.
    try_it : tuple of TryIt
        "Try it" lines of :data:`SENSITIVITY_PAGE` run with this variant.
    """

    kind: str
    name: str
    order: int
    cells: Callable | None = None
    profiles: Mapping | None = None
    finish: Callable | None = None
    status: Callable | None = None
    description: str = ""
    knobs: tuple | None = None
    defaults: Mapping = field(default_factory=dict)
    extra: Mapping = field(default_factory=dict)
    try_it: tuple = ()

    def __post_init__(self):
        if self.kind not in VARIANT_KINDS:
            raise ValueError(f"kind must be one of {VARIANT_KINDS}, got {self.kind!r}")


@dataclass(frozen=True)
class ExperimentSpec:
    """One committed result (one grid of a page), declared once in its folder's ``experiments.py``.

    Attributes
    ----------
    name : str
        The result's name (the page's notebook name when the page has one grid).
    cells, cell : callable
        ``cells(**parameters)`` → list of cells; the cell function the runner maps over them.
    profiles : mapping
        Profile name (``"quick"``, ``"paper"``) → keyword parameters of ``cells``.
    order : int
        Where the book lists the result (``python -m dpstack.companion list``, the reproducing
        page's table, the order of the grids on a page): results are listed by it.
    finish, status : callable or None
        ``finish(frame)`` → the tidy table; ``status(**parameters)`` → None when the data is present.
    description : str
        One line for ``list``.
    page : str
        The notebook that renders it (default: ``name``).
    seed : int
        Its root seed.
    knobs : tuple of Knob
        Its grid's parameters a page, the command line and :mod:`dpstack.companion.live` turn.
    protocol : mapping or None
        For a result with protocol variants, how the protocol sensitivity page reads it: ``table``
        (reader words), ``stacked`` and ``one_level`` methods, ``extra`` (the columns a variant adds),
        optionally ``redrawn``, ``curves``, ``subset``, ``summarised``, ``refit_note``.
    variants : tuple of Variant
    draws : mapping or None
        What one repeat draws anew: dataset (None: every one) → a kind of
        :func:`dpstack.companion.variants.draw_sentence`.
    try_it : tuple of TryIt
        The "Try it" lines of its page run with this result.
    page_protocols : bool
        Whether its page takes the protocol parameters (``refit``, ``row_scale``) of its variants.
    variant_of : (str, str) or None
        Set on the declarations :meth:`expanded` derives from a :class:`Variant`: (primary, kind).
    """

    name: str
    cells: Callable
    cell: Callable
    profiles: Mapping
    order: int
    finish: Callable | None = None
    status: Callable | None = None
    description: str = ""
    page: str = ""
    seed: int = 0
    knobs: tuple = ()
    protocol: Mapping | None = None
    variants: tuple = ()
    draws: Mapping | None = None
    try_it: tuple = ()
    page_protocols: bool = True
    variant_of: tuple | None = None

    def __post_init__(self):
        if not self.page:
            object.__setattr__(self, "page", self.name)

    def variant(self, kind):
        """The name of the variant of ``kind`` (None when the result has none)."""
        return next((v.name for v in self.variants if v.kind == kind), None)

    def expanded(self):
        """This declaration and one per protocol variant (each a declaration of its own result)."""
        return [self] + [self._resolve(v) for v in self.variants]

    def _inherited(self, knob, defaults):
        """``knob`` for a variant: its value falls back to this result's profile, then to its default."""
        if knob.name in defaults:
            return replace(knob, default=defaults[knob.name])
        fallback = knob.default
        profiles = self.profiles

        def default(profile):
            params = profiles.get(profile, {})
            return params[knob.name] if knob.name in params else fallback(profile)

        return replace(knob, default=default)

    def _resolve(self, v):
        if v.kind == "another_seed":
            cells = another_draw(self.cells)
            profiles = {k: dict(p, **v.extra) for k, p in self.profiles.items()}
            description = v.description or (
                f"{self.description}; root seed {SECOND_SEED}, data draws from {SECOND_DATA_DRAW}"
            )
            seed = SECOND_SEED
        else:
            cells, profiles, description, seed = v.cells, v.profiles, v.description, self.seed
        knobs = v.knobs
        if knobs is None:
            knobs = tuple(self._inherited(k, v.defaults) for k in self.knobs)
            if v.kind == "row_scale":
                knobs = (row_scales(const(profiles["paper"]["row_scales"])), *knobs)
        return ExperimentSpec(
            v.name,
            cells,
            self.cell,
            profiles,
            v.order,
            finish=v.finish or self.finish,
            status=v.status or self.status,
            description=description,
            page=SENSITIVITY_PAGE,
            seed=seed,
            knobs=knobs,
            try_it=v.try_it,
            variant_of=(self.name, v.kind),
        )


def row_scales(default):
    """The knob of a row-scale variant: the public constants the rows are divided by."""
    return Knob(
        "row_scales",
        positive_reals("rows are divided by each; 1 is the primary result"),
        "the public row scales s (rows ÷ s)",
        default,
    )


# ------------------------------------------------------------------------------------------ discovery
def _folders():
    """The packages holding declarations: each paper's folder (by its ``ORDER``) and the chapters."""
    found = []
    for info in pkgutil.iter_modules(_papers.__path__, _papers.__name__ + "."):
        if info.ispkg:
            package = importlib.import_module(info.name)
            found.append((getattr(package, "ORDER", 0), info.name))
    return [name for _, name in sorted(found)] + [_chapters.__name__]


@functools.lru_cache(maxsize=1)
def declarations():
    """The ``experiments`` module of every folder that has one (papers by their ``ORDER``, then the chapters)."""
    out = []
    for package in _folders():
        if importlib.util.find_spec(package + ".experiments") is not None:
            out.append(importlib.import_module(package + ".experiments"))
    return tuple(out)


@functools.lru_cache(maxsize=1)
def experiment_specs():
    """Every declared result, its protocol variants included, in the book's order (by ``order``)."""
    specs = [s for module in declarations() for spec in module.EXPERIMENTS for s in spec.expanded()]
    names = [s.name for s in specs]
    doubles = sorted({n for n in names if names.count(n) > 1})
    if doubles:
        raise RuntimeError(f"results declared twice: {doubles}")
    return tuple(sorted(specs, key=lambda s: s.order))


def paper_items():
    """Every paper's tables and figures (each paper's ``ITEMS``, papers by their ``ORDER``)."""
    return tuple(item for module in declarations() for item in getattr(module, "ITEMS", ()))
