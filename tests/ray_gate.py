"""An episode that the test holds open: :class:`GateRenderer` is a renderer factory (picklable, so
Ray's workers get it) whose renderer is built only once the test creates the gate file; it first
writes the ``started`` file, so the test knows an episode is running. A test that observes a
running evaluation holds it open this way instead of racing its end.

``python tests/ray_gate.py OUT GATE_DIR [evaluate keyword JSON]`` runs ``evaluate --backend ray``
over two fake scenes with this factory (the test's driver process)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from fakes import FakeRenderer, small_scene


class GateRenderer:
    """``factory(spec, width, height)``: writes ``<dir>/started``, waits for ``<dir>/gate``, then
    builds a :class:`~fakes.FakeRenderer`."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    def __call__(self, spec, width=None, height=None):
        d = Path(self.directory)
        (d / "started").touch()
        while not (d / "gate").exists():     # held until the test opens the gate
            time.sleep(0.1)
        return FakeRenderer(spec, width, height)


def scenes(directory: Path, n: int = 2) -> list[str]:
    """``n`` small fake scene files in ``directory``."""
    out = []
    for k in range(n):
        p = directory / f"fake-{k}.json"
        p.write_text(small_scene(32, 32, yaw_deg=15.0 * k, scene_id=f"fake-{k}").to_json())
        out.append(str(p))
    return out


def main(argv: list[str]) -> int:
    from spatialscout_gym.core.errors import SpatialScoutError
    from spatialscout_gym.eval.running.evaluate import EvalSettings, evaluate
    out, gate = Path(argv[0]), Path(argv[1])
    options = json.loads(argv[2]) if len(argv) > 2 else {}
    try:
        summary = evaluate(out, EvalSettings("uniform-ball", 3, 10, 32), scenes(gate), seeds=1, backend="ray",
                           progress=False, renderer_factory=GateRenderer(str(gate)), **options)
    except SpatialScoutError as exc:
        print(f"spatialscout: {exc}", file=sys.stderr)
        return 2
    for o in summary.failed:
        print(f"failed {o.task.key}: {o.error}")
    return 1 if summary.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
