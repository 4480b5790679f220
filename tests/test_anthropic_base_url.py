"""docs/models.md says which ``--base-url`` form ``anthropic:`` takes; each form it names reaches the
Anthropic service's own paths (``/v1/messages``), through the real anthropic client against a
scripted server on 127.0.0.1. Fake pixels at 32 px."""

from __future__ import annotations

import re
from pathlib import Path

from fakes import FakeRenderer, small_scene
from vlm_scripted import ScriptedServer

DOC = Path(__file__).resolve().parents[1] / "docs" / "models.md"


def _anthropic_paragraph() -> str:
    text = " ".join(DOC.read_text(encoding="utf-8").split())
    return next(p for p in re.split(r"(?<=\.) (?=For `)", text) if p.startswith("For `anthropic:`"))


def test_the_docs_name_the_anthropic_base_url_form_and_each_form_works(tmp_path):
    from spatialscout_gym.baselines.registry import make_agent
    from spatialscout_gym.eval.running.runner import run_episode
    said = _anthropic_paragraph()
    forms = re.findall(r"`http://127\.0\.0\.1:8000(/v1)?`", said)
    assert "without `/v1`" in said and "/v1/messages" in said and set(forms) == {"", "/v1"}, said
    spec = small_scene(32, 32)
    for i, suffix in enumerate(sorted(set(forms))):
        with ScriptedServer(lambda step, body, fmt: [("finish_mapping", {})] if step == 0 else []) as server:
            url = server.anthropic_url + suffix          # the documented form on this server's port
            agent = make_agent("anthropic:scripted", base_url=url, api_key="local", model_call_budget=3,
                               max_tokens=256)
            result = run_episode(agent, spec, tmp_path / f"run{i}", image_budget=3, resolution=32,
                                 renderer=FakeRenderer(spec))
            assert result["status"] == "ok", result.get("error")
            assert server.posts and set(server.posts) == {"/v1/messages"}, (suffix, server.posts)
