"""Sphinx extension: expand ``{dpstack-api}`` in the API page into autodoc entries.

The API reference lists every public module of ``dpstack`` and the public names
it exports, so a module or function added by any chapter appears without
editing the page. A module exports its ``__all__`` or, without one, the
functions and classes it defines whose names do not start with ``_``.

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
PACKAGE = "dpstack"
# Reading order; modules not named here follow alphabetically.
ORDER = [
    "mechanisms",
    "solvers",
    "linear",
    "accounting",
    "stacking",
    "transfer",
    "multiparty",
    "audit",
    "theory",
    "datasets",
    "experiments",
    "plotting",
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


def module_section(module, entries):
    title = f"`{module.__name__}`"
    lines = [
        f"## {title}",
        "",
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


def api_text():
    sections, _ = plan()
    parts = []
    for name, entries in sorted(sections.items(), key=lambda item: rank(item[0])):
        module = importlib.import_module(name)
        parts.append(module_section(module, sorted(entries, key=lambda e: order_in(module, e))))
    return "\n".join(parts)


def order_in(module, entry):
    """Source order of the names in the module's ``__all__`` (or alphabetical)."""
    names = list(getattr(module, "__all__", []))
    return (names.index(entry[0]) if entry[0] in names else len(names), entry[0])


def expand_marker(app, docname, source):
    if MARKER in source[0]:
        source[0] = source[0].replace(MARKER, api_text())


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
    # The page depends on the package's code: reread it on every build.
    app.connect(
        "env-get-outdated", lambda app, env, added, changed, removed: [d for d in env.found_docs if d.endswith("api")]
    )
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
