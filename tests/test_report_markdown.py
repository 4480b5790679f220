"""report.md and compare's Markdown keep scene text (categories, run and agent names) as text: a
category written as a Markdown link renders as its literal characters, never as a live link."""

from __future__ import annotations

import json

import pytest
from markdown_it import MarkdownIt

from fakes import FakeRenderer, small_scene
from spatialscout_gym.eval.running.evaluate import EvalSettings, evaluate
from spatialscout_gym.eval.pages.report import compare_reports, md

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


def test_recorded_strings_cannot_close_a_code_block_or_render_html(tmp_path):
    """Markup in catalog_version and end_reason (fields of result.json, which anyone may edit):
    report.md rendered by a CommonMark renderer with raw HTML on holds no live <script> or <img>, and
    the per-scene table stays one code block. A scene id edited to carry a code fence no longer
    reaches the page: it disagrees with the trace, and the report refuses the run in one line."""
    from spatialscout_gym.eval.layout import EvalDirError
    from spatialscout_gym.eval.pages.report import write_report
    spec = tmp_path / "fake-0.json"
    spec.write_text(small_scene(32, 32, scene_id="fake-0").to_json())
    out = tmp_path / "ev"
    evaluate(out, EvalSettings("origin", 3, 10, 32), [str(spec)], progress=False, renderer_factory=FakeRenderer)
    path = out / "fake-0" / "seed_0" / "result.json"
    honest = json.loads(path.read_text())
    path.write_text(json.dumps({**honest, "scene_id": "fake-0\n```\n<script>alert(1)</script>\n````\n"}))
    with pytest.raises(EvalDirError, match="names scene") as caught:
        write_report(out)
    assert "\n" not in str(caught.value).split(": names scene")[0]
    result = dict(honest)
    result["catalog_version"] = "<script>alert(3)</script>"
    result["end_reason"] = "<img src=y onerror=alert(4)>"
    path.write_text(json.dumps(result))
    write_report(out)
    renderer = MarkdownIt("commonmark")       # raw HTML rendered as HTML, as CommonMark says
    renderer.validateLink = lambda url: True
    html = renderer.render((out / "report.md").read_text())
    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;alert(3)" in html and "&lt;img src=y onerror=alert(4)&gt;" in html
    blocks = html.split("<pre><code>")
    per_scene = [b for b in blocks[1:] if "fake-0" in b.split("</code></pre>")[0] and "100.00" in b.split("</code></pre>")[0]]
    assert len(per_scene) == 1 and "</code></pre>" in per_scene[0]
