"""Sphinx extension: the API reference, one page per module, generated from the docstrings.

The API reference lists every public module of ``dpstack`` and the public names it exports,
so a function added by any chapter appears without editing a page. A module exports its
``__all__`` or, without one, the functions and classes it defines whose names do not start
with ``_``.

The reference is split into pages (:func:`pages`): one per module of the package's top level
(a subpackage's page holds its submodules too, e.g. ``dpstack.audit.mutants`` on the
``dpstack.audit`` page), except the subpackages named in :data:`SPLIT`, whose submodules get a
page each. Page ``book/api/<slug>.md`` holds the marker ``{dpstack-api} <slug>``, expanded into
autodoc entries when the page is read; ``{dpstack-api-index}`` on ``book/api.md`` becomes the
table of the pages. :func:`write_pages` writes the page files and the test suite checks that
they and the book's table of contents list exactly :func:`pages`.

Each object is documented once, under the shortest module path that exports it
(``dpstack.audit.exact_privacy_loss`` rather than ``dpstack.audit.exact...``);
every other public path of it (``dpstack.PrivateLogisticRegression``, the
defining module) is registered as an alias, so ``{func}`` and ``{class}``
references written either way link to the entry.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from collections import defaultdict

MARKER = "{dpstack-api}"
INDEX_MARKER = "{dpstack-api-index}"
PACKAGE = "dpstack"
# Subpackages too large for one page: each of their submodules gets its own.
SPLIT = ("dpstack.companion", "dpstack.companion.papers", "dpstack.companion.chapters")
# Where the pages live, relative to the book's root (the folder of _toc.yml).
PAGE_DIR = "book/api"
# Reading order; modules not named here follow alphabetically.
ORDER = [
    "mechanisms",
    "solvers",
    "linear",
    "accounting",
    "stacking",
    "transfer",
    "multiparty",
    "alternatives",
    "audit",
    "theory",
    "datasets",
    "companion",
]
# Members of scikit-learn's base classes (get_params, score, ...) are documented there.
SKLEARN_BASES = "BaseEstimator, ClassifierMixin, RegressorMixin, TransformerMixin, object"


def is_public(dotted):
    return not any(part.startswith("_") for part in dotted.split("."))


def rank(name):
    top = name.split(".")[1] if "." in name else ""
    return (ORDER.index(top) if top in ORDER else len(ORDER), name)


def public_modules():
    """The package and its public submodules, in reading order."""
    package = importlib.import_module(PACKAGE)
    names = [PACKAGE] + [
        info.name for info in pkgutil.walk_packages(package.__path__, PACKAGE + ".") if is_public(info.name)
    ]
    return [importlib.import_module(name) for name in sorted(names, key=rank)]


def exported(module):
    """(name, object) pairs a module exports: functions and classes only."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = [
            n
            for n, obj in vars(module).items()
            if not n.startswith("_") and getattr(obj, "__module__", None) == module.__name__
        ]
    pairs = []
    for name in names:
        obj = getattr(module, name, None)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            pairs.append((name, obj))
    return pairs


def plan():
    """({module name: [(name, obj)]} to document, {alias path: documented path})."""
    paths = defaultdict(list)  # id(obj) -> every public path that exports it
    objects = {}
    for module in public_modules():
        for name, obj in exported(module):
            paths[id(obj)].append(f"{module.__name__}.{name}")
            objects[id(obj)] = obj
    sections, aliases = defaultdict(list), {}
    for key, obj in objects.items():
        found = paths[key]
        defining = f"{obj.__module__}.{obj.__qualname__}"
        if is_public(defining) and defining not in found:
            found.append(defining)
        # The top-level package only re-exports; prefer a module that says what the object is.
        candidates = [p for p in found if p.count(".") >= 2] or found
        home = min(candidates, key=lambda p: (p.count("."), p))
        module_name, _, name = home.rpartition(".")
        sections[module_name].append((name, obj))
        aliases.update({p: home for p in found if p != home})
    return sections, aliases


def module_section(module, entries, heading=True):
    title = f"`{module.__name__}`"
    lines = [f"## {title}", ""] if heading else []
    lines += [
        "```{eval-rst}",
        f".. automodule:: {module.__name__}",
        "   :no-members:",
        "",
        ".. autosummary::",
        "   :nosignatures:",
        "",
    ]
    lines += [f"   {name}" for name, _ in entries]
    lines.append("")
    for name, obj in entries:
        if inspect.isclass(obj):
            lines += [f".. autoclass:: {name}", "   :members:", f"   :inherited-members: {SKLEARN_BASES}", ""]
        else:
            lines += [f".. autofunction:: {name}", ""]
    lines += ["```", ""]
    return "\n".join(lines)


def page_of(module_name):
    """The slug of the page that documents a module: ``"audit"``, ``"companion.live"``, ``"companion.papers.pst"``."""
    parts = module_name.split(".")
    if len(parts) == 1:
        return PACKAGE
    for split in sorted(SPLIT, key=len, reverse=True):  # the deepest split that holds the module
        if module_name == split or module_name.startswith(split + "."):
            depth = split.count(".") + 2
            return ".".join(parts[1:depth])
    return parts[1]


def pages():
    """{slug: [module names]} in reading order: every page of the reference and what it holds."""
    sections, _ = plan()
    out = {}
    for name in sorted(sections, key=rank):
        out.setdefault(page_of(name), []).append(name)
    return out


def page_title(slug):
    return PACKAGE if slug == PACKAGE else f"{PACKAGE}.{slug}"


def page_source(slug):
    """The text of the page file ``book/api/<slug>.md``."""
    return f"# `{page_title(slug)}`\n\n{MARKER} {slug}\n"


def write_pages(root="."):
    """Write one file per page under ``book/api/`` (and remove pages of modules that are gone)."""
    from pathlib import Path

    folder = Path(root) / PAGE_DIR
    folder.mkdir(parents=True, exist_ok=True)
    wanted = {f"{slug}.md": page_source(slug) for slug in pages()}
    for path in folder.glob("*.md"):
        if path.name not in wanted:
            path.unlink()
    for name, text in wanted.items():
        (folder / name).write_text(text, encoding="utf-8")
    return sorted(wanted)


def summary_line(module):
    """The first sentence of a module's docstring (its one-line summary), in MyST."""
    doc = inspect.getdoc(module) or ""
    first = doc.strip().split("\n\n")[0].replace("\n", " ")
    first = re.sub(r":(\w+):`([^`]+)`", r"{\1}`\2`", first)  # reStructuredText roles as MyST roles
    first = first.replace("``", "`")
    return first.replace("|", "\\|")


def index_text():
    """The table of the pages on the API reference's first page: page, what its modules are."""
    lines = ["| page | what it documents |", "|---|---|"]
    for slug, modules in pages().items():
        main = importlib.import_module(modules[0])
        n = len(modules) - 1
        more = f" (and {n} submodule{'s' if n > 1 else ''})" if n else ""
        lines.append(f"| {{doc}}`{page_title(slug)} <api/{slug}>` | {summary_line(main)}{more} |")
    return "\n".join(lines) + "\n"


def api_text(slug=None):
    """Autodoc entries of one page (``slug``), or of the whole package (``None``)."""
    sections, _ = plan()
    names = sorted(sections, key=rank) if slug is None else pages()[slug]
    parts = []
    for name in names:
        module = importlib.import_module(name)
        entries = sorted(sections[name], key=lambda e: order_in(module, e))
        # The page's own module needs no heading below the page title.
        parts.append(module_section(module, entries, heading=slug is None or name != page_title(slug)))
    return "\n".join(parts)


def order_in(module, entry):
    """Source order of the names in the module's ``__all__`` (or alphabetical)."""
    names = list(getattr(module, "__all__", []))
    return (names.index(entry[0]) if entry[0] in names else len(names), entry[0])


_PAGE_MARKER = re.compile(r"^\{dpstack-api\} (\S+)\s*$", re.M)


def expand_marker(app, docname, source):
    if INDEX_MARKER in source[0]:
        source[0] = source[0].replace(INDEX_MARKER, index_text())
    match = _PAGE_MARKER.search(source[0])
    if match:
        text = api_text(match.group(1))
        source[0] = source[0][: match.start()] + text + source[0][match.end() :]


def register_aliases(app, env):
    """Let references to any public path of an object resolve to its one entry."""
    domain = env.get_domain("py")
    _, aliases = plan()
    for alias, home in aliases.items():
        entry = domain.objects.get(home)
        if entry is not None and alias not in domain.objects:
            domain.objects[alias] = entry._replace(aliased=True)


# Docstrings are numpydoc text, and two habits of plain text are markup in reStructuredText:
# |D_l| (a set size or a norm) is a substitution and noise_scale_ (a fitted attribute) is a
# hyperlink reference. Both are escaped in prose, before napoleon reads the sections, and left
# alone in literals, math, code, doctests, tables and "name : type" lines.
_LITERAL = re.compile(r"(``.+?``|`[^`]+`)")
_BAR = re.compile(r"(?<!\\)\|")
_TRAILING_UNDERSCORE = re.compile(r"\b([A-Za-z]\w*?)_(?=[\s.,;:)]|$)")
_NAME_TYPE_LINE = re.compile(r"^\s*\*{0,2}[A-Za-z_][\w, *]*(\s:(\s.*)?)?$")


def _escape_prose(line):
    parts = _LITERAL.split(line)
    for j in range(0, len(parts), 2):
        part = _BAR.sub(r"\\|", parts[j])
        parts[j] = _TRAILING_UNDERSCORE.sub(r"\1\\_", part)
    return "".join(parts)


def escape_plain_text(app, what, name, obj, options, lines):
    """Show ``|D_l|`` and ``coef_`` in a docstring's prose as written."""
    block_indent = None  # indentation of the line that opened a literal/math/code block
    for i, line in enumerate(lines):
        indent = len(line) - len(line.lstrip())
        if block_indent is not None:
            if not line.strip() or indent > block_indent:
                continue
            block_indent = None
        stripped = line.strip()
        if stripped.endswith("::") or stripped.startswith(".."):
            block_indent = indent
            continue
        if (
            stripped.startswith((">>>", "...", "| ", "+-", "+="))
            or stripped.endswith(" |")
            or _NAME_TYPE_LINE.match(line)
        ):
            continue
        lines[i] = _escape_prose(line)


def skip_sklearn_routing(app, what, name, obj, skip, options):
    """scikit-learn adds ``set_*_request`` methods to every estimator class: not ours."""
    if name == "get_metadata_routing" or (name.startswith("set_") and name.endswith("_request")):
        return True
    return None


def setup(app):
    app.connect("source-read", expand_marker)
    app.connect("env-updated", register_aliases)  # all pages read, none resolved yet
    app.connect("autodoc-skip-member", skip_sklearn_routing)
    app.connect("autodoc-process-docstring", escape_plain_text, priority=400)  # before napoleon
    # The pages depend on the package's code: reread them on every build.
    app.connect(
        "env-get-outdated",
        lambda app, env, added, changed, removed: [
            d for d in env.found_docs if d == "book/api" or d.startswith("book/api/")
        ],
    )
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}


if __name__ == "__main__":  # regenerate the page files: python book/_ext/api_listing.py
    print("\n".join(write_pages()))
