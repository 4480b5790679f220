"""The README is a newcomer's ten-minute read: short, every page it links to exists, and no paragraph stops mid-sentence."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
# About ten minutes of reading; result tables, recipes and reference material live in docs/.
MAX_LINES = 350


def test_readme_is_short():
    n = len(README.read_text().splitlines())
    assert n <= MAX_LINES, f"README.md has {n} lines (at most {MAX_LINES}): move reference material to docs/"


def test_every_relative_link_in_the_readme_and_docs_resolves():
    pages = [README, *sorted((ROOT / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if "://" in target:
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not broken, "links to missing files: " + ", ".join(broken)


def prose_paragraphs(text: str) -> list[str]:
    """The README's prose paragraphs: blank-line separated, outside code blocks, not headings,
    tables, lists, pictures or HTML."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    blocks = [b.strip() for b in re.split(r"\n\s*\n", text) if b.strip()]
    return [b for b in blocks if not re.match(r"[#|!<>*-]|\d+\. ", b)]


def test_no_readme_paragraph_stops_mid_sentence():
    stopped = [p[-80:] for p in prose_paragraphs(README.read_text()) if not p.rstrip().endswith((".", ":", "!", "?"))]
    assert stopped == [], "README paragraphs that do not end a sentence"
    assert prose_paragraphs("Intro.\n\n```\ncode\n\nmore\n```\n\n| a |\n\nIt stops: the report counts\n") == [
        "Intro.", "It stops: the report counts"]
