"""The introduction describes the sidebar as it is: every page, in the sidebar's order, part by part."""

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def sidebar():
    """[(part caption, [page paths])] from _toc.yml, in order."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    return [(part["caption"], [chapter["file"] for chapter in part["chapters"]]) for part in toc["parts"]]


def reading_guide():
    """The numbered items of the introduction's "How to read it" section."""
    text = (ROOT / "book" / "intro.md").read_text(encoding="utf-8")
    section = text.split("## How to read it", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\d+\. (.*?)(?=^\d+\. |^\S|\Z)", section, re.S | re.M)


def linked_pages(item):
    """The pages an item links with {doc}, as paths from the book's root, in order."""
    pages = []
    for target in re.findall(r"\{doc\}`(?:[^`<]*<)?([^`<>]+)>?`", item):
        path = target if target.startswith("../") else f"book/{target}"
        pages.append(path.removeprefix("../"))
    return pages


def order_problems(parts, items):
    problems = []
    if len(items) != len(parts):
        return [f"the guide has {len(items)} numbered parts, the sidebar {len(parts)}"]
    for (caption, pages), item in zip(parts, items):
        short = re.search(r"\(([^)]+)\)\s*$", caption)
        name = short.group(1) if short else caption
        if not item.startswith(f"**{name}"):
            problems.append(f"part {caption!r} is described as {item[:30]!r}")
        linked = [p for p in linked_pages(item) if p in pages]
        if linked != [p for p in pages if p in linked]:
            problems.append(f"{name}: pages named out of the sidebar's order: {linked}")
        missing = [p for p in pages if p not in linked]
        if missing:
            problems.append(f"{name}: sidebar pages the guide does not name: {missing}")
    return problems


def test_the_introduction_walks_the_sidebar_in_order():
    assert order_problems(sidebar(), reading_guide()) == []


def test_the_check_catches_a_swapped_part_a_swapped_page_and_a_missing_page():
    parts = [("Foundations", ["notebooks/plr", "notebooks/audit"]), ("Paper 1: stacking (PST)", ["book/pst_overview"])]
    good = [
        "**Foundations.** {doc}`../notebooks/plr` then {doc}`audit <../notebooks/audit>`.",
        "**PST.** The {doc}`overview <pst_overview>`.",
    ]
    assert order_problems(parts, good) == []
    assert (
        "out of the sidebar's order"
        in order_problems(parts, [good[0].replace("plr", "X").replace("audit", "plr").replace("X", "audit"), good[1]])[
            0
        ]
    )
    assert "does not name" in order_problems(parts, [good[0].split(" then")[0], good[1]])[0]
    assert "described as" in order_problems(parts, good[::-1])[0]
    assert "numbered parts" in order_problems(parts, good[:1])[0]


NUMBER_WORDS = (
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
)


def count_problems(text, n_parts):
    """The count the guide gives ("The sidebar has six parts") against the sidebar's parts."""
    said = re.search(r"sidebar has (\w+) parts", text)
    if said is None:
        return ["the guide does not say how many parts the sidebar has"]
    word = said.group(1).lower()
    number = int(word) if word.isdigit() else NUMBER_WORDS.index(word) if word in NUMBER_WORDS else None
    return [] if number == n_parts else [f"the guide says the sidebar has {word} parts; it has {n_parts}"]


def test_the_guide_counts_the_parts_of_the_sidebar():
    text = (ROOT / "book" / "intro.md").read_text(encoding="utf-8")
    assert count_problems(text, len(sidebar())) == []
    assert count_problems("The sidebar has six parts, in this order:", 8)  # the planted miscount is found
