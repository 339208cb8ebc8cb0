"""Sphinx extension: expand ``{dpstack-api}`` in the API page into autodoc entries.

The API reference lists every public module of ``dpstack`` and, in each, the
public names it defines, so a module or function added by any chapter appears
without editing the page. A module's public names are its ``__all__`` (or,
without one, the functions and classes it defines whose names do not start
with ``_``); each object is documented once, in the module that defines it.
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

MARKER = "{dpstack-api}"
PACKAGE = "dpstack"
# Reading order; modules not named here follow alphabetically.
ORDER = ["mechanisms", "solvers", "linear", "accounting", "stacking", "transfer", "multiparty",
         "audit", "theory", "datasets", "experiments", "plotting"]
# Members of scikit-learn's base classes (get_params, score, ...) are documented there.
SKLEARN_BASES = "BaseEstimator, ClassifierMixin, RegressorMixin, TransformerMixin, object"


def public_modules():
    package = importlib.import_module(PACKAGE)
    names = [PACKAGE]
    for info in pkgutil.walk_packages(package.__path__, prefix=PACKAGE + "."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)

    def rank(name):
        top = name.split(".")[1] if "." in name else ""
        return (ORDER.index(top) if top in ORDER else len(ORDER), name)

    return [importlib.import_module(name) for name in sorted(names, key=rank)]


def defined_public_names(module, documented):
    """Public objects of ``module``, each object only in the first module that owns it."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n, obj in vars(module).items()
                 if not n.startswith("_") and (inspect.isclass(obj) or inspect.isfunction(obj))
                 and obj.__module__ == module.__name__]
    found = []
    for name in names:
        obj = getattr(module, name)
        home = getattr(obj, "__module__", module.__name__)
        owner_is_public = not any(p.startswith("_") for p in home.split("."))
        if (owner_is_public and home != module.__name__) or id(obj) in documented:
            continue  # documented in the module that defines it
        if not (inspect.isclass(obj) or callable(obj)):
            continue
        documented.add(id(obj))
        found.append((name, obj))
    return found


def module_section(module, entries):
    title = f"`{module.__name__}`"
    lines = [f"## {title}", "", "```{eval-rst}", f".. automodule:: {module.__name__}",
             "   :no-members:", "", ".. autosummary::", "   :nosignatures:", ""]
    lines += [f"   {name}" for name, _ in entries]
    lines.append("")
    for name, obj in entries:
        if inspect.isclass(obj):
            lines += [f".. autoclass:: {name}", "   :members:",
                      f"   :inherited-members: {SKLEARN_BASES}", ""]
        else:
            lines += [f".. autofunction:: {name}", ""]
    lines += ["```", ""]
    return "\n".join(lines)


def api_text():
    documented = set()
    sections = []
    for module in public_modules():
        entries = defined_public_names(module, documented)
        if entries:
            sections.append(module_section(module, entries))
    return "\n".join(sections)


def expand_marker(app, docname, source):
    if MARKER in source[0]:
        source[0] = source[0].replace(MARKER, api_text())


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
        if (stripped.startswith((">>>", "...", "| ", "+-", "+=")) or stripped.endswith(" |")
                or _NAME_TYPE_LINE.match(line)):
            continue
        lines[i] = _escape_prose(line)


def skip_sklearn_routing(app, what, name, obj, skip, options):
    """scikit-learn adds ``set_*_request`` methods to every estimator class: not ours."""
    if name == "get_metadata_routing" or (name.startswith("set_") and name.endswith("_request")):
        return True
    return None


def setup(app):
    app.connect("source-read", expand_marker)
    app.connect("autodoc-skip-member", skip_sklearn_routing)
    app.connect("autodoc-process-docstring", escape_plain_text, priority=400)  # before napoleon
    # The page depends on the package's code: reread it on every build.
    app.connect("env-get-outdated", lambda app, env, added, changed, removed:
                [d for d in env.found_docs if d.endswith("api")])
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
