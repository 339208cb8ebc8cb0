"""The book and the package stand alone: no prose names a file, folder or tracker outside them.

The fast twin of the browser test's check (``tests/browser/outside_words.py`` holds the word list
and says what is deliberately not flagged). Scanned here: book/*.md, every notebook cell's source
(markdown prose and code), and the docstrings and comments of dpstack. Notebook *outputs* are
checked on the built pages by the browser test.
"""

from __future__ import annotations

import ast
import io
import sys
import tokenize
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))
import outside_words  # noqa: E402


def markdown_hits(path):
    return [(path.name, name, excerpt) for name, excerpt in outside_words.find(path.read_text())]


def notebook_hits(path):
    nb = nbformat.read(path, as_version=4)
    return [
        (f"{path.name} cell {i} ({cell.cell_type})", name, excerpt)
        for i, cell in enumerate(nb.cells)
        for name, excerpt in outside_words.find(cell.source)
    ]


def python_prose(source):
    """The docstrings and comments of a module, as (line, text) pairs."""
    prose = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                prose.append((node.body[0].lineno, doc))
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            prose.append((token.start[0], token.string))
    return prose


def python_hits(path):
    return [
        (f"{path.relative_to(ROOT)}:{line}", name, excerpt)
        for line, text in python_prose(path.read_text())
        for name, excerpt in outside_words.find(text)
    ]


def format_hits(hits):
    return "\n".join(f"  {where}: {name}: …{excerpt}…" for where, name, excerpt in hits)


BOOK_PAGES = sorted((ROOT / "book").glob("*.md"))
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
MODULES = sorted((ROOT / "dpstack").rglob("*.py"))


def test_the_sources_scanned_are_there():
    # A moved folder must not turn the scans below into checks of nothing.
    assert len(BOOK_PAGES) >= 5 and len(NOTEBOOKS) >= 20 and len(MODULES) >= 20
    assert sum(len(python_prose(p.read_text())) for p in MODULES) > 200


@pytest.mark.parametrize("kind", ["book pages", "notebooks", "dpstack docstrings and comments"])
def test_no_prose_names_something_outside_the_book(kind):
    scan = {
        "book pages": (BOOK_PAGES, markdown_hits),
        "notebooks": (NOTEBOOKS, notebook_hits),
        "dpstack docstrings and comments": (MODULES, python_hits),
    }[kind]
    files, hits_of = scan
    hits = [hit for path in files for hit in hits_of(path)]
    assert not hits, f"{kind} name things a reader cannot open:\n{format_hits(hits)}"


# What must be caught, and ordinary sentences that must not be.
CAUGHT = {
    "see DESIGN.md §5.2": "design-notes file",
    "(erratum 8 of the design notes)": "design notes",
    "when the project's shared/data folder sits beside the repository": "path outside the repository",
    "DPSTACK_DATA=../shared/data": "path outside the repository",
    "read from /work/main/.venv": "path outside the repository",
    "its manifest lists them as not obtained": "data manifest outside the repository",
    "pinned in MANIFEST.md": "data manifest outside the repository",
    "PST text (001_d4a072d1db78f605.txt)": "copy of a paper outside the repository",
    "target (issue 7)": "tracker issue",
    "as asked in issue #13": "tracker issue",
    "Figure 3 (the issue's 'Figure 4')": "tracker issue",
    "the issue calls it Figure 4": "tracker issue",
    "the deliberately broken test doubles": "workflow jargon",
}
NOT_CAUGHT = [
    "The issue with vote is that one party can flip every label.",
    "This raises the issue of which λ to use for each block.",
    "PST branch #1 is PPTL centre 3; branch #16 is the smallest.",
    "the blocks share one budget: a shared Hessian, a shared ε'",
    "see https://archive.ics.uci.edu/ml/work/shared/x",  # a remote URL is a link, not a local path
    "the design of the experiment follows §4.1",
]


@pytest.mark.parametrize("text, name", sorted(CAUGHT.items()))
def test_each_kind_of_outside_word_is_caught(text, name):
    found = outside_words.find(text)
    assert [n for n, _ in found] == [name], found


@pytest.mark.parametrize("text", NOT_CAUGHT)
def test_ordinary_sentences_are_not_flagged(text):
    assert outside_words.find(text) == []


def test_the_browser_check_reads_the_article_of_a_page():
    page = """<html><head><title>DESIGN.md in the title bar</title>
      <script>var note = "see DESIGN.md";</script></head>
      <body><nav>Sidebar: issue 7</nav>
      <main><h1>PST Figure 3</h1><p>Compare the <code>shared/data</code> copy &amp; the
      issue&#39;s numbering.</p><style>.x{content:"test doubles"}</style></main></body></html>"""
    problems = outside_words.page_problems(page)
    assert len(problems) == 2, problems
    assert "(path outside the repository)" in problems[0] and "shared/data" in problems[0]
    assert "(tracker issue)" in problems[1] and "issue's numbering" in problems[1]
    # Outside <main>: the title, a script, the sidebar and a stylesheet are not the article.
    assert all("DESIGN" not in p and "issue 7" not in p and "test doubles" not in p for p in problems)


def test_a_page_without_main_is_read_from_its_body():
    assert outside_words.page_problems("<body><p>See DESIGN.md.</p><script>x='test doubles'</script></body>") == [
        "names something outside the book (design-notes file): …See DESIGN.md.…"
    ]
    assert outside_words.page_problems("<body><main><p>Clean prose.</p></main></body>") == []


def test_a_planted_violation_is_found_in_each_kind_of_source(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Title\n\nAs in DESIGN.md §4."),
        nbformat.v4.new_code_cell("x = 1  # fine"),
    ]
    nbformat.write(nb, tmp_path / "page.ipynb")
    (tmp_path / "page.md").write_text("Data in the project's shared/data folder.\n")
    (tmp_path / "mod.py").write_text(
        '"""Module (the issue calls it Figure 4)."""\n'
        'TEXT = "a string literal naming DESIGN.md is not prose"\n'
        "def f():\n    # see issue 12\n    return 1\n"
    )
    assert [h[1] for h in notebook_hits(tmp_path / "page.ipynb")] == ["design-notes file"]
    assert [h[1] for h in markdown_hits(tmp_path / "page.md")] == ["path outside the repository"]
    prose = [text for _, text in python_prose((tmp_path / "mod.py").read_text())]
    assert prose == ["Module (the issue calls it Figure 4).", "# see issue 12"]


# Words of our own workflow in reader text (book pages, notebook prose and printed outputs).


def operations_page(path):
    return path.stem in outside_words.OPERATIONS_PAGES


def reader_texts(path):
    """(where, text) for every piece of reader text of a book page or notebook."""
    if path.suffix == ".md":
        yield path.name, outside_words.reader_text(path.read_text())
        return
    nb = nbformat.read(path, as_version=4)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            yield f"{path.name} cell {i}", outside_words.reader_text(cell.source)
            continue
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            text = output.get("text") or data.get("text/markdown") or ""
            if "text/html" in data:
                text += " " + outside_words.article_prose(f"<main>{data['text/html']}</main>")
            if text.strip():
                yield f"{path.name} cell {i} output", outside_words.reader_text(text)


def reader_hits(path):
    return [
        (where, name, excerpt)
        for where, text in reader_texts(path)
        for name, excerpt in outside_words.find_reader(text, operations_page(path))
    ]


@pytest.mark.parametrize("path", BOOK_PAGES + NOTEBOOKS, ids=lambda p: p.name)
def test_reader_text_uses_no_workflow_words(path):
    hits = reader_hits(path)
    assert not hits, f"{path.name} uses words of our own workflow:\n{format_hits(hits)}"


READER_CAUGHT = {
    "only what the fitted object releases (its `_release_attributes`)": "internal name",
    "The adversary of the privacy review holds the fitted object": "internal review",
    "a changed module is named in a STALE line": "stale-result line",
    "computed once by `python -m dpstack.companion audit-tables` and stored": "developer command",
    "`make reproduce` recomputes them": "developer command",
    "exactly the papers' numbers (a unit test\nchecks this)": "test-suite remark",
    "the layout of our build machines": "our machines",
    "(`tests/test_multiparty.py` compares them)": "test file",
    "computed 2026-11-25 on AMD EPYC in 43 s": "machine string",
    "machine Linux-6.18.44-fc-v509-x86_64-with-glibc2.36": "machine string",
    "The page renders the committed paper-profile results": "profile name",
    "`-p profile quick` recomputes a smaller grid": "profile name",
}
READER_NOT_CAUGHT = [
    "the per-sample privacy loss stays below ε; the review of the literature in §2",
    "a statistical test checks nothing about privacy here",  # "a test checks" only as a phrase about our suite
    "w_s and z_k are the source and target weights",
    "PST-F(W) beats PST-S at every ε in the paper's profile of results",
    "```bash\npapermill notebooks/plr.ipynb out.ipynb -p n_repeats 30\n```",  # a command in a code block
]


@pytest.mark.parametrize("text, name", sorted(READER_CAUGHT.items()))
def test_each_kind_of_workflow_word_is_caught(text, name):
    found = outside_words.find_reader(outside_words.reader_text(text))
    assert found and {n for n, _ in found} == {name}, found


@pytest.mark.parametrize("text", READER_NOT_CAUGHT)
def test_ordinary_reader_sentences_are_not_flagged(text):
    assert outside_words.find_reader(outside_words.reader_text(text)) == []


def test_the_operations_pages_may_name_commands_but_not_machines():
    text = "`make reproduce` on the paper profile on AMD EPYC; the layout of our build machines"
    assert [n for n, _ in outside_words.find_reader(text, operations=True)] == ["our machines"]


def test_the_browser_check_reads_prose_not_code_blocks():
    page = (
        "<main><p>Run <code>python -m dpstack.companion audit-tables</code>.</p>"
        "<pre>python -m dpstack.companion reproduce pst_fig1_epsilon</pre></main>"
    )
    problems = outside_words.page_problems(page)
    assert len(problems) == 1 and "developer command" in problems[0] and "audit-tables" in problems[0]
    assert outside_words.page_problems(page, operations=True) == []
