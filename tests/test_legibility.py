"""The browser test's legibility rules, on small HTML strings: tables, images, page names.

The rules live in ``tests/browser/legibility.py`` (which says what each one does and does not
flag); the browser test applies them to every built page.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))
import legibility  # noqa: E402


def page(body, title="This page"):
    return (
        f"<html><body><nav><a href='x.html'>Private logistic regression (PLR)</a> mpl_har</nav>"
        f"<main><article><section><h1>{title}<a class='headerlink' href='#t'>#</a></h1>{body}"
        f"</section></article></main></body></html>"
    )


PAGES = {
    "notebooks/plr.html": legibility.page_names("Private logistic regression (PLR)", "notebooks/plr.ipynb"),
    "notebooks/mpl_har.html": legibility.page_names(
        "Activity recognition (UCI HAR, Figure 2)", "notebooks/mpl_har.ipynb"
    ),
    "notebooks/datasets.html": legibility.page_names("Datasets", "notebooks/datasets.ipynb"),
    "notebooks/audit.html": legibility.page_names("Auditing the privacy claims", "notebooks/audit.ipynb"),
}


def test_page_names_are_the_title_and_unambiguous_file_names():
    assert PAGES["notebooks/mpl_har.html"] == [
        "Activity recognition (UCI HAR, Figure 2)",
        "mpl_har",
        "mpl_har.ipynb",
        "mpl_har.md",
    ]
    assert PAGES["notebooks/datasets.html"] == ["datasets.ipynb", "datasets.md"]  # "Datasets": an ordinary word
    assert legibility.page_title(page("<p>x</p>", title="A RUIJIN-like cohort")) == "A RUIJIN-like cohort"


def test_a_page_named_in_prose_without_a_link_is_reported():
    found = legibility.unlinked_page_names(page("<p>The curves of mpl_har show it.</p>"), PAGES)
    assert len(found) == 1 and "notebooks/mpl_har.html" in found[0] and "curves of mpl_har show" in found[0]
    found = legibility.unlinked_page_names(
        page("<p>See <em>Private logistic regression (PLR)</em> first, then audit.ipynb.</p>"), PAGES
    )
    assert [f.split()[2] for f in found] == ["notebooks/plr.html", "notebooks/audit.html"]
    found = legibility.unlinked_page_names(page("<p>Open <code>pst_x</code> or <code>mpl_har</code>.</p>"), PAGES)
    assert found == ["names page notebooks/mpl_har.html without a link: `mpl_har`"]


def test_links_headings_code_own_title_and_ordinary_words_are_not_reported():
    body = (
        "<h2>Activity recognition (UCI HAR, Figure 2)</h2>"
        "<p>See <a href='mpl_har.html'>mpl_har</a> and <a href='plr.html'><span>Private logistic "
        "regression (PLR)</span></a>. Private logistic regression (PLR) is this page's own title.</p>"
        "<p>The datasets, the audit, our private logistic regression (plr) and not_mpl_har_x.</p>"
        "<p>Run <code>python scripts/run_notebooks.py notebooks/mpl_har.ipynb</code>.</p>"
        "<div class='highlight'><pre>mpl_har = 1</pre></div>"
        "<div class='cell_output'><pre>written by mpl_har.ipynb</pre></div>"
        "<span class='math'>mpl_har</span>"
    )
    own = legibility.unlinked_page_names(
        page(body, "Private logistic regression (PLR)"), PAGES, own="notebooks/plr.html"
    )
    assert own == []
    assert "mpl_har" not in legibility.parse(page("<p>x</p>")).prose  # the sidebar is not the article


def test_raster_images_narrower_than_the_limit_are_reported_and_svg_passes():
    body = (
        "<img src='../_images/a.png'><img src='../_images/b.svg'><img src='../_images/c.png'>"
        "<img src='data:image/svg+xml;base64,AAAA'><img src='../_images/d.jpg'>"
    )
    found = legibility.image_problems(page(body), {"../_images/a.png": 1000, "../_images/c.png": 1600})
    assert found == [
        "raster image 1000 px wide (< 1600 px, not SVG): ../_images/a.png",
        "image not measured (not vector): ../_images/d.jpg",
    ]
    outside = "<html><body><nav><img src='logo.png'></nav><main><article><p>x</p></article></main></body></html>"
    assert legibility.image_problems(outside, {"logo.png": 10}) == []


def test_a_wide_table_is_reported_unless_it_scrolls_sideways():
    tables = [
        {"label": "method", "section": "Beside the paper", "width": 620, "room": 360, "scrolls": False},
        {"label": "method", "section": "", "width": 620, "room": 360, "scrolls": True},
        {"label": "n", "section": "", "width": 200, "room": 360, "scrolls": False},
    ]
    found = legibility.table_problems(tables)
    assert found == [
        "table cut off at 400 px in section “Beside the paper” (starts “method”): "
        "620 px wide, 360 px of room, no sideways scroll"
    ]


def test_one_link_to_a_page_is_enough_and_docstrings_are_not_searched():
    body = (
        "<p>The <a href='mpl_har.html#top'>HAR page</a> shows it.</p><p>Later, mpl_har again.</p>"
        "<section id='module-dpstack.audit'><p>Auditing the privacy claims: exact losses.</p></section>"
        "<dl class='py function'><dd><p>See audit.ipynb.</p></dd></dl>"
    )
    assert legibility.unlinked_page_names(page(body), PAGES, own="notebooks/plr.html") == []
    # Without the link, the later mention is reported.
    body = body.replace("<a href='mpl_har.html#top'>HAR page</a>", "HAR page")
    assert len(legibility.unlinked_page_names(page(body), PAGES, own="notebooks/plr.html")) == 1


def test_a_name_that_is_itself_a_link_elsewhere_is_not_reported():
    body = "<p>The source is <a href='https://example.org/notebooks/mpl_har.ipynb'>mpl_har.ipynb</a>.</p>"
    assert legibility.unlinked_page_names(page(body), PAGES, own="notebooks/plr.html") == []


def test_a_verdict_table_must_show_its_full_width():
    fits = [{"section": "Paper vs ours", "width": 640, "visible": 640}]
    assert legibility.verdict_table_problems(fits, 1400) == []
    cut = [{"section": "Paper vs ours", "width": 1200, "visible": 420}]
    found = legibility.verdict_table_problems(cut, 400)
    assert len(found) == 1 and "35%" in found[0] and "400 px" in found[0] and "Paper vs ours" in found[0]


def test_faint_captions_and_notes_are_reported():
    theme_grey = {"text": "rounded to 3 decimals", "color": [156, 164, 175], "background": [255, 255, 255]}
    assert round(legibility.contrast_ratio([156, 164, 175], [255, 255, 255]), 1) == 2.5  # the review's measure
    found = legibility.contrast_problems([theme_grey])
    assert len(found) == 1 and "2.5:1" in found[0]
    assert legibility.contrast_problems([{**theme_grey, "color": [50, 50, 50]}]) == []


def test_wide_tables_and_folded_tables_the_prose_points_to_are_reported():
    wide = {
        "label": "mutant",
        "section": "Every mutant",
        "width": 1656,
        "visible": 784,
        "firstTwo": 551,
        "firstTwoVisible": 368,
    }
    fits = {"label": "method", "section": "", "width": 700, "visible": 700, "firstTwo": 200, "firstTwoVisible": 200}
    found = legibility.wide_table_problems([wide, fits], 1400)
    assert len(found) == 1 and "47% of its width at 1400 px" in found[0]
    found = legibility.wide_table_problems([wide, fits], 400, full=False)
    assert len(found) == 1 and "first two columns at 400 px (368 of 551 px)" in found[0]
    told = {"summary": "16 rows × 9 columns", "section": "x", "before": "", "after": "Read the exact column against ε."}
    quiet = {"summary": "64 rows", "section": "x", "before": "The chosen λ.", "after": "## Next section"}
    found = legibility.folded_table_problems([told, quiet])
    assert len(found) == 1 and "Read the exact column" in found[0]
    assert legibility.folded_table_problems([{**quiet, "before": "The table below lists every run:"}])
