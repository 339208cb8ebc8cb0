"""Link the first use of each glossary term on every page to its entry in the glossary.

Rule: on each page of the book (``book/*.md`` and the notebooks' Markdown cells, in page order;
for the MPL experiment pages, their template, then the pages are regenerated from it),
the first occurrence of a term of ``book/glossary.md`` in prose becomes ``{term}`NAME```; later
occurrences stay plain. Prose excludes headings, code (fenced and inline), math, link text and
targets, roles, directive options and fenced directives. A page that already links a term
(by hand or by an earlier run) is left alone for that term, so the script is idempotent: run it
again after other branches are merged and it only links what is new. Terms that are ordinary
English words (vote, soft, avg, batch, indiv) are linked only on the MPL pages, where they name
methods.

Usage: ``python scripts/link_terms.py [--check]`` (``--check``: change nothing, exit 1 if a page
would change).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
import notebook_pages

ROOT = Path(__file__).resolve().parents[1]
GLOSSARY = ROOT / "book" / "glossary.md"
SKIPPED_PAGES = {"glossary", "notation", "how_built", "api", "bibliography"}
MPL_ONLY = {"vote", "soft", "avg", "batch", "indiv"}
NOT_LINKED = {"AUC", "privacy unit", "PST", "PPTL", "MPL"}  # defined for reference, too common to link

PROTECT = re.compile(
    r"```.*?```|~~~.*?~~~|\$\$.*?\$\$|\$[^$\n]+\$|\{[\w:-]+\}`[^`]*`|`[^`\n]*`|\[[^\]\n]*\]\([^)\n]*\)"
    r"|<[^>\n]+>|^#[^\n]*$|^:[\w-]+:[^\n]*$|^\(\w[\w-]*\)=\s*$"
    r"|^\|[^\n]*$",  # Markdown table rows: some are generated (e.g. the PST figure mapping) and compared
    re.S | re.M,
)
LINKED = re.compile(r"\{term\}`([^`<]+?)(?:\s*<([^>]+)>)?`")


def glossary_terms(path=GLOSSARY):
    """The terms of the glossary directive, longest first (so PLR-FS is matched before PLR)."""
    text = path.read_text()
    block = re.search(r"```\{glossary\}\n(.*?)```", text, re.S).group(1)
    terms = [line.strip() for line in block.splitlines() if line and not line[0].isspace()]
    return sorted(terms, key=len, reverse=True)


def term_pattern(term):
    return re.compile(r"(?<![\w(-])" + re.escape(term) + r"(?![\w)-]|\((?:U|W|R)\))")


def link_first_uses(sources, terms, mpl_page):
    """Link the first prose use of each term across ``sources`` (the page's Markdown, in order)."""
    already = {(m.group(2) or m.group(1)).strip() for s in sources for m in LINKED.finditer(s)}
    wanted = [t for t in terms if t not in already and t not in NOT_LINKED and (mpl_page or t not in MPL_ONLY)]
    out = list(sources)
    for term in wanted:
        pattern = term_pattern(term)
        for i, source in enumerate(out):
            replaced, done = _link_once(source, pattern, term)
            if done:
                out[i] = replaced
                break
    return out


def _link_once(source, pattern, term):
    pos = 0
    for protected in list(PROTECT.finditer(source)) + [None]:
        end = protected.start() if protected else len(source)
        match = pattern.search(source, pos, end)
        if match:
            return source[: match.start()] + f"{{term}}`{term}`" + source[match.end() :], True
        if protected is None:
            break
        pos = protected.end()
    return source, False


def _variants(nb, path):
    """The Markdown cells of each page a notebook makes: one page, or one per page generated from a template.

    A template's cell tagged ``only:NAME=VALUE`` belongs to the pages with that parameter value,
    so each generated page gets the links of its own first uses.
    """
    markdown = [c for c in nb.cells if c.cell_type == "markdown"]
    params = [p for template, p in notebook_pages.run_notebooks.PAGES.values() if (ROOT / template).resolve() == path]
    if not params:
        return [markdown]
    only = notebook_pages.run_notebooks._only_tags
    return [[c for c in markdown if not only(c) or any(str(p.get(n)) == v for n, v in only(c))] for p in params]


def pages():
    for path in sorted((ROOT / "book").glob("*.md")):
        if path.stem not in SKIPPED_PAGES and not path.stem.startswith("findings"):
            yield path
    yield from notebook_pages.editable_notebooks()


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    check = "--check" in argv
    terms = glossary_terms()
    changed = []
    for path in pages():
        mpl_page = path.stem.startswith("mpl_")  # the MPL pages and their template
        if path.suffix == ".md":
            (new,) = link_first_uses([path.read_text()], terms, mpl_page)
            if new != path.read_text():
                changed.append(path)
                if not check:
                    path.write_text(new)
            continue
        nb = nbformat.read(path, as_version=4)
        before = [c.source for c in nb.cells]
        for cells in _variants(nb, path):
            new = link_first_uses([c.source for c in cells], terms, mpl_page)
            for cell, source in zip(cells, new):
                cell.source = source
        if [c.source for c in nb.cells] != before:
            changed.append(path)
            if not check:
                nbformat.write(nb, path)
    if changed and not check:
        changed += notebook_pages.sync_generated_pages()
    for path in changed:
        print(f"{'would link' if check else 'linked'} terms in {path.relative_to(ROOT)}")
    return 1 if check and changed else 0


if __name__ == "__main__":
    raise SystemExit(main())
