"""The scheme diagrams (PPTL Figures 1-2, MPL Figure 1): vector, self-contained, legible at 400 px.

Each is a hand-written SVG in book/_static. A reader on a phone sees it 400 px wide, so every
text must still be at least 8.5 px tall at that width; every text must lie inside the drawing;
nothing may be fetched or run (no external image, font, link or script); each has a title and a
description for screen readers, and is placed on its page inside a figure with a caption.
"""

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
STATIC = ROOT / "book" / "_static"
SVG = "{http://www.w3.org/2000/svg}"
READER_WIDTH = 400  # px: a phone
MIN_TEXT_PX = 8.5

# diagram -> the page that shows it
DIAGRAMS = {
    "pptl_fig1_problem.svg": "notebooks/pptl_overview.ipynb",
    "pptl_fig2_framework.svg": "notebooks/pptl_overview.ipynb",
    "mpl_fig1_workflow.svg": "book/mpl_overview.md",
}


def svg_problems(text):
    """What makes an SVG unfit for the book, one message each (empty: fit)."""
    root = ET.fromstring(text)
    problems = []
    if root.tag != f"{SVG}svg":
        return ["not an SVG document"]
    view = [float(v) for v in root.get("viewBox", "").split()]
    if len(view) != 4:
        return ["no viewBox: it cannot scale to the reader's width"]
    _, _, width, height = view
    if root.find(f"{SVG}title") is None or not (root.findtext(f"{SVG}desc") or "").strip():
        problems.append("no <title> and <desc> for screen readers")
    scale = READER_WIDTH / width
    default = float(root.get("font-size", "16"))

    def walk(node, size):
        size = float(node.get("font-size", size))
        if node.tag in (f"{SVG}text", f"{SVG}tspan") and (node.text or "").strip() and size * scale < MIN_TEXT_PX:
            problems.append(f"text {node.text.strip()!r} is {size * scale:.1f} px at {READER_WIDTH} px width")
        for child in node:
            walk(child, size)

    walk(root, default)
    for node in root.iter(f"{SVG}text"):
        x, y = float(node.get("x")), float(node.get("y"))
        if not (0 <= x <= width and 0 <= y <= height):
            problems.append(f"text {''.join(node.itertext())!r} at ({x:g}, {y:g}) lies outside the drawing")
    for node in root.iter():
        if node.tag in (f"{SVG}script", f"{SVG}image", f"{SVG}foreignObject", f"{SVG}a"):
            problems.append(f"<{node.tag.removeprefix(SVG)}> element: the drawing must be self-contained")
    if re.search(r"(?:href|src)\s*=\s*[\"'](?!#)|@import|url\((?!#)", text):
        problems.append("refers to something outside the file")
    return problems


def page_text(page):
    path = ROOT / page
    if path.suffix == ".ipynb":
        return "\n".join(cell.source for cell in nbformat.read(path, as_version=4).cells)
    return path.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", sorted(DIAGRAMS))
def test_diagram_is_legible_vector_and_self_contained(name):
    assert svg_problems((STATIC / name).read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("name", sorted(DIAGRAMS))
def test_diagram_is_shown_in_a_captioned_figure_on_its_page(name):
    text = page_text(DIAGRAMS[name])
    block = re.search(r"```\{figure\} [^\n]*" + re.escape(name) + r"\n(.*?)```", text, re.S)
    assert block, f"{name} is not in a figure directive on {DIAGRAMS[name]}"
    options, _, caption = block.group(1).partition("\n\n")
    assert ":alt:" in options and len(caption.split()) >= 30, "the caption must say what the reader sees"


def test_the_checker_rejects_each_fault():
    good = (
        '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 560 100" font-size="15"><title>t</title>'
        '<desc>d</desc><text x="10" y="20">A label</text></svg>'
    )
    assert svg_problems(good) == []
    assert "px at 400" in svg_problems(good.replace('font-size="15"', 'font-size="11"'))[0]
    assert "outside" in svg_problems(good.replace('x="10"', 'x="600"'))[0]
    assert "no viewBox" in svg_problems(good.replace(' viewBox="0 0 560 100"', ""))[0]
    assert "screen readers" in svg_problems(good.replace("<desc>d</desc>", ""))[0]
    assert any(
        "outside the file" in p
        for p in svg_problems(good.replace("</svg>", '<image href="https://example.org/x.png"/></svg>'))
    )
    small = good.replace("A label", 'A <tspan font-size="10">tiny</tspan> label')
    assert "'tiny'" in svg_problems(small)[0]
