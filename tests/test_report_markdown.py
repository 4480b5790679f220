"""report.md and compare's Markdown keep scene text (categories, run and agent names) as text: a
category written as a Markdown link renders as its literal characters, never as a live link."""

from __future__ import annotations

import json

from markdown_it import MarkdownIt

from fakes import FakeRenderer, small_scene
from spatialscout_gym.eval.evaluate import EvalSettings, evaluate
from spatialscout_gym.eval.report import compare_reports, md

EVIL = "[x](javascript:alert(13))Painting"


def _render(text: str) -> str:
    """HTML of ``text`` by a renderer that trusts every link target (markdown-it alone drops
    ``javascript:`` targets; other renderers do not)."""
    renderer = MarkdownIt("gfm-like")
    renderer.validateLink = lambda url: True
    return renderer.render(text)


def _scene_with_category(tmp_path, category: str) -> str:
    spec = json.loads(small_scene(32, 32, scene_id="fake-evil").to_json())
    text = json.dumps(spec).replace('"Chair"', json.dumps(category))
    p = tmp_path / "fake-evil.json"
    p.write_text(text)
    return str(p)


def test_a_category_written_as_a_link_is_text_in_report_md(tmp_path):
    scene = _scene_with_category(tmp_path, EVIL)
    out = tmp_path / "ev"
    evaluate(out, EvalSettings("origin", 3, 10, 32), [scene], progress=False, renderer_factory=FakeRenderer)
    text = (out / "report.md").read_text()
    html = _render(text)
    assert "javascript:" in html            # the category is shown ...
    assert "<a " not in html and "href" not in html   # ... and is no link
    assert EVIL in _render(md(EVIL))  # rendered back to its literal text
    other = tmp_path / "ev2"
    evaluate(other, EvalSettings("origin", 3, 10, 32), [scene], progress=False, renderer_factory=FakeRenderer)
    compared, _ = compare_reports([out, other])
    assert "<a " not in _render(compared)
