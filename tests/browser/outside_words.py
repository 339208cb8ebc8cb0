"""Words a reader of the book or the repository cannot follow: references to things outside them.

The book and the package stand alone. A page or a docstring must not send the reader to files
they do not have (a design-notes file, a folder of the machine that built the book, the copies of
the papers we read), to a project tracker ("issue 7", "the issue calls it ..."), or use the jargon
of our own workflow ("test doubles"). :data:`PATTERNS` lists what we look for; :func:`find`
returns every match in a text with a little context.

What is deliberately *not* flagged, to keep false positives out:

* the bare word "issue" (and "issues") in ordinary English — "the issue with vote is its
  sensitivity" is a scientific sentence. Only tracker usages are caught: "issue 7", "issue #7",
  "the issue's", "the issue calls/says/asks …", "issue tracker";
* "#N" alone: the papers number RUIJIN's branches "#1" … "#16";
* "shared" as an English word ("a shared budget", "the shared Hessian"): only the path ``shared/``.

The same list is used twice: by the browser test on every built page (:func:`page_problems` on
the page's HTML, restricted to the article, so the sidebar is checked once per page it appears on
at most) and by a fast unit test over the sources (``tests/test_outside_words.py``: book/*.md,
the notebooks' markdown cells, dpstack's docstrings and comments).
"""

from __future__ import annotations

import html.parser
import re

#: (name, compiled pattern). Names are what a report shows; patterns are case-insensitive.
PATTERNS = [
    ("design-notes file", re.compile(r"\bDESIGN\.md\b", re.I)),
    ("design notes", re.compile(r"\bdesign\s+notes?\b", re.I)),
    ("path outside the repository", re.compile(r"(?<![\w-])shared/|(?<![\w.:/])/work/", re.I)),
    ("data manifest outside the repository", re.compile(r"\bMANIFEST\.md\b|\b(?:data|its|shared)\s+manifest\b", re.I)),
    ("copy of a paper outside the repository", re.compile(r"\b00\d_[0-9a-f]{16}\.txt\b", re.I)),
    (
        "tracker issue",
        re.compile(
            r"\bissues?\s*#?\d+\b"  # issue 7, issue #7, issues 3
            r"|\bthe\s+issue(?:'s|’s)"  # the 'Figure 4'
            r"|\bthe\s+issue\s+(?:calls|says|asks|wants|lists|names)\b"  # the issue calls it ...
            r"|\b(?:issue|bug)\s+tracker\b|\btracker\s+issue\b",
            re.I,
        ),
    ),
    ("workflow jargon", re.compile(r"\btest\s+doubles?\b", re.I)),
]


#: Words of our own workflow a reader of a page cannot follow (reader text only: the book's pages,
#: the notebooks' prose and what their cells print; not code, not the package's docstrings, which
#: are for developers). Commands inside a code block (a "Try it" box, the appendix on how the book
#: is built) are code, not prose: :func:`reader_text` drops fenced blocks, :class:`_ArticleText`
#: drops ``<pre>``. Profile names are allowed on the two pages about building the book.
READER_PATTERNS = [
    ("internal name", re.compile(r"(?<![\w./-])_[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")),
    ("internal review", re.compile(r"\b(?:the|our)\s+privacy\s+review\b|\bthe\s+review's\b", re.I)),
    ("stale-result line", re.compile(r"\bSTALE\b")),
    (
        "developer command",
        re.compile(r"\bpython\s+-m\s+\w|\bmake\s+(?:reproduce|book|test|html|benchmarks?|lint)\b|\bpytest\b|\bnbval\b"),
    ),
    ("test-suite remark", re.compile(r"\bunit\s+tests?\b|\ba\s+test\s+(?:checks|compares)\b", re.I)),
    ("our machines", re.compile(r"\b(?:our|the)\s+build\s+machines?\b|\bour\s+machines?\b", re.I)),
    ("test file", re.compile(r"\btests/[\w/]*\w+\.py\b|\btest_\w+\.py\b")),
    ("machine string", re.compile(r"\bx86_64\b|\bglibc\d|\bLinux-\d|\bAMD\s+EPYC\b|\bn_jobs\s*=\s*\d", re.I)),
    ("profile name", re.compile(r"\b(?:smoke|quick|paper)[- ]profile\b|\bprofile\s+(?:smoke|quick|paper)\b", re.I)),
]

#: Pages about building the book: commands and profile names are their subject.
OPERATIONS_PAGES = ("how_built", "reproducing", "rerunning")

FENCED = re.compile(r"^(```|~~~)[^\n]*\n.*?^\1\s*$", re.S | re.M)
HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)


def reader_text(markdown):
    """The prose of a Markdown source: fenced code blocks and HTML comments blanked out."""
    blank = lambda m: "\n" * m.group().count("\n")  # noqa: E731 - keep line numbers
    return FENCED.sub(blank, HTML_COMMENT.sub(blank, markdown))


def find_reader(text, operations=False):
    """Every word of our own workflow in reader ``text``: (name, excerpt) in order of appearance.

    ``operations``: the text is a page about building the book (commands and profiles allowed).
    """
    allowed = (
        {"developer command", "profile name", "test file", "test-suite remark", "machine string"}
        if operations
        else set()
    )
    hits = []
    for name, pattern in READER_PATTERNS:
        if name in allowed:
            continue
        for match in pattern.finditer(text):
            start, end = max(0, match.start() - 40), min(len(text), match.end() + 40)
            hits.append((match.start(), name, " ".join(text[start:end].split())))
    return [(name, excerpt) for _, name, excerpt in sorted(hits)]


#: Web addresses are links to other sites, not paths: blanked out before the search.
URL = re.compile(r"\b(?:https?|ftp)://[^\s<>\"')\]]+", re.I)


def find(text):
    """Every outside word in ``text``: a list of (name, excerpt) in order of appearance."""
    hits = []
    searched = URL.sub(lambda m: " " * len(m.group()), text)
    for name, pattern in PATTERNS:
        for match in pattern.finditer(searched):
            start, end = max(0, match.start() - 40), min(len(text), match.end() + 40)
            excerpt = " ".join(text[start:end].split())
            hits.append((match.start(), name, excerpt))
    return [(name, excerpt) for _, name, excerpt in sorted(hits)]


class _ArticleText(html.parser.HTMLParser):
    """The text a reader sees in a page's article (``<main>``, else ``<body>``), without scripts."""

    SKIP = {"script", "style", "template", "noscript"}
    CODE = {"pre"}
    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.main, self.body = [], []
        self.depth = {"main": 0, "body": 0}
        self.skipping = 0
        self.in_code = 0
        self.prose = []

    def handle_starttag(self, tag, attrs):
        if tag in self.VOID:
            return
        if tag in self.depth:
            self.depth[tag] += 1
        if tag in self.SKIP:
            self.skipping += 1
        if tag in self.CODE:
            self.in_code += 1

    def handle_endtag(self, tag):
        if tag in self.depth and self.depth[tag]:
            self.depth[tag] -= 1
        if tag in self.SKIP and self.skipping:
            self.skipping -= 1
        if tag in self.CODE and self.in_code:
            self.in_code -= 1

    def handle_data(self, data):
        if self.skipping:
            return
        if self.depth["main"]:
            self.main.append(data)
            if not self.in_code:
                self.prose.append(data)
        if self.depth["body"]:
            self.body.append(data)

    def text(self):
        return " ".join(self.main or self.body)


def article_text(page_html):
    """What a reader reads on a page: the text of ``<main>`` (or ``<body>``), scripts excluded."""
    parser = _ArticleText()
    parser.feed(page_html)
    parser.close()
    return parser.text()


def article_prose(page_html):
    """The article's text outside code blocks (``<pre>``): what :data:`READER_PATTERNS` is matched against."""
    parser = _ArticleText()
    parser.feed(page_html)
    parser.close()
    return " ".join(parser.prose or parser.body)


def page_problems(page_html, operations=False):
    """Problems for the browser report: one line per outside word or workflow word found on the page."""
    return [
        f"names something outside the book ({name}): …{excerpt}…" for name, excerpt in find(article_text(page_html))
    ] + [
        f"uses our workflow's words ({name}): …{excerpt}…"
        for name, excerpt in find_reader(article_prose(page_html), operations)
    ]
