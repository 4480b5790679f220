"""Write ``tests/data/v1_evaluation/``: a scripted model, a reference agent and an NBV agent on one
procedural scene, recorded by the package as it was before the typed run record (version 0.3.0,
``result.json`` without ``schema_version``).

Ran once at commit e6fb88d, from a checkout of that commit with its own tests on the path
(``PYTHONPATH=<checkout> python tests/data/record_v1_evaluation.py OUT``, fake pixels for the model
and reference runs, a real render at 32 px for the NBV run); it imports that commit's API and its
test helpers. ``tests/test_v1_records.py`` holds what the files must still do."""
import sys
from pathlib import Path
sys.path.insert(0, str(Path.cwd() / "tests"))   # that checkout's test helpers
from fakes import FakeRenderer
from vlm_scripted import ScriptedServer
from spatialscout_gym.eval.running.evaluate import evaluate
from spatialscout_gym.eval.running.tasks import EvalSettings

def policy(step, body, fmt):
    k = sum(isinstance(m, dict) and m.get("role") == "assistant" for m in body.get("messages", []))
    return [("capture_image", {})] if k == 0 else [("list_entities", {})] if k == 1 else []


def main():
    out = Path(sys.argv[1])


    with ScriptedServer(policy) as server:
        s = EvalSettings("openai:scripted", 3, None, 32, agent_options={"model_call_budget": 4},
                         runtime_options={"base_url": server.openai_url, "api_key": "local"})
        print(evaluate(out / "model", s, ["procedural:6"], seeds=1, workers=1, progress=False,
                       renderer_factory=FakeRenderer, write_report=False))
    print(evaluate(out / "reference", EvalSettings("oracle-explorer", 3, None, 32), ["procedural:6"], seeds=1, workers=1,
                   progress=False, renderer_factory=FakeRenderer, write_report=False))
    print(evaluate(out / "nbv", EvalSettings("random-nbv", 3, None, 32), ["procedural:6"], seeds=1, workers=1,
                   progress=False, write_report=False))


if __name__ == "__main__":
    main()
