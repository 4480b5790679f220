"""Write ``tests/data/tool_call_replay.json``: the replies of ``tests/tool_call_replay_cases.py``
replayed through the pre-gymnasium ``ToolCallWrapper`` (it drove the ``Episode`` directly).

Ran once at commit 4c46094 (``PYTHONPATH=. python tests/data/record_tool_call_replay.py`` from the
repository root); it imports that commit's API and does not run on later ones. The JSON it wrote is
the old path's recorded expectation for ``tests/test_tool_call_replay.py``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from fakes import FakeRenderer, small_scene  # noqa: E402
from tool_call_replay_cases import CASES  # noqa: E402

from spatialscout_gym.baselines.passive import capture_scripted_views  # noqa: E402
from spatialscout_gym.core.scoring import GroundTruth, score_scene  # noqa: E402
from spatialscout_gym.episode import Episode  # noqa: E402
from spatialscout_gym.wrappers.tool_call import (ModelReply, ToolCall, ToolCallWrapper,  # noqa: E402
                                                 to_anthropic_messages, to_openai_messages)


def sha(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()


def message_record(m) -> dict:
    d = m.to_trace()
    d["jpeg_sha256"] = [hashlib.sha256(p.jpeg).hexdigest() for p in m.images]
    return d


def run_case(case: dict) -> dict:
    spec = small_scene(case["res"], case["res"])
    ep = Episode(spec.public, FakeRenderer(spec), image_budget=case["image_budget"], tool_call_budget=None)
    frames = capture_scripted_views(ep, case["passive_views"]) if case.get("passive_views") else None
    w = ToolCallWrapper(ep, model_call_budget=case["model_call_budget"], passive_frames=frames)
    k = 0
    while not w.done:
        w.begin_request()
        calls = case["replies"][k] if k < len(case["replies"]) else []
        w.apply_reply(ModelReply(text=f"step {k}", tool_calls=[ToolCall(f"c{k}_{i}", n, a) for i, (n, a) in
                                                               enumerate(calls)],
                                 usage={"input_tokens": 100 + k, "output_tokens": 7}))
        k += 1
    metrics = score_scene(GroundTruth.from_spec(spec), ep.accepted_map).metrics()
    system, anthropic = to_anthropic_messages(w.messages)
    return {"trace": json.loads(json.dumps(ep.trace)), "messages": [message_record(m) for m in w.messages],
            "metrics": json.loads(json.dumps(metrics)), "counters": ep.counters(), "model_calls": w.model_calls,
            "usage": w.usage, "openai_wire_sha256": sha(to_openai_messages(w.messages)),
            "anthropic_wire_sha256": sha([system, anthropic])}


if __name__ == "__main__":
    out = {name: run_case(case) for name, case in CASES.items()}
    (HERE / "tool_call_replay.json").write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    for name, r in out.items():
        print(name, r["counters"]["end_reason"], r["model_calls"], len(r["trace"]), r["metrics"]["all"]["mean_iou"])
