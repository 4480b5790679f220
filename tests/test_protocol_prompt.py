"""docs/protocol.md section 10.1 lists the default prompt sentence by sentence with a source for
each: the table's sentences are exactly the prompt's lines, in order, for every kind of episode
(V > 1 and V = 1, model calls and MCP), and the first message and the reminder are the table's too."""

from __future__ import annotations

from pathlib import Path

import pytest

from fakes import small_scene
from spatialscout_gym.conversation.prompt import (DEFAULT_PROMPT_STYLE, first_message_text, prompt_role,
                                              reminder_text, task_prompt)

DOC = Path(__file__).resolve().parents[1] / "docs" / "protocol.md"


def _rows() -> list[tuple[str, str, str]]:
    text = DOC.read_text()
    table = text[text.index("<!-- prompt-sentences:begin -->"):text.index("<!-- prompt-sentences:end -->")]
    rows = []
    for line in table.splitlines()[3:]:   # the marker, the header and its rule
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3:
            rows.append((cells[0], cells[1], cells[2]))
    return rows


def _expected(when: set[str], **values) -> list[str]:
    return [sentence.format(**values) for w, sentence, _ in _rows() if w in when]


def test_every_row_has_a_source_and_a_known_condition():
    rows = _rows()
    assert len(rows) >= 15
    assert {w for w, _, _ in rows} == {"all", "model calls", "MCP", "V > 1", "V = 1", "first message", "reminder"}
    for _, sentence, source in rows:
        assert source.startswith(("paper ", "release, per an outside audit", "as above")), (sentence, source)
    assert "wording is not public" in DOC.read_text()


@pytest.mark.parametrize("mcp", [False, True])
@pytest.mark.parametrize("image_budget", [100, 1])
def test_the_tables_sentences_are_exactly_the_default_prompts(mcp, image_budget):
    spec = small_scene(32, 32)
    prompt = task_prompt(spec.public, spec.public.intrinsics, model_call_budget=100, image_budget=image_budget,
                         budget_counts_tool_calls=mcp)
    when = {"all", "MCP" if mcp else "model calls", "V > 1" if image_budget > 1 else "V = 1"}
    assert prompt.splitlines() == _expected(when, B=100, V=image_budget)
    assert DEFAULT_PROMPT_STYLE == "appendix-a" and prompt_role(DEFAULT_PROMPT_STYLE) == "user"
    # the rules the sources require are there; the sentence they do not support is not
    assert ("A reply without a tool call ends the episode." in prompt) is (not mcp)
    assert "each of your responses is one call" not in prompt


def test_the_first_message_and_the_reminder_are_the_tables():
    assert [first_message_text()] == _expected({"first message"})
    assert [reminder_text(10, 7, 1, 4)] == _expected({"reminder"}, k=10, images=7)
