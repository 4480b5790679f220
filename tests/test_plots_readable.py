"""The replay curves and the tool-use figure as a paper would print them: percent axes from 0 (not
the -0.04..0.04 of an all-zero curve), whole-number ticks for calls and images, no legend over the
data, model calls and tool calls never on the axes of one group, and no tool hidden behind another."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure

from spatialscout_gym.eval.analysis.behaviour import TOOLS, plot_behaviour
from spatialscout_gym.eval.running.replay import plot_replay


def _capture(monkeypatch) -> dict:
    figures = {}
    real = Figure.savefig

    def savefig(self, path, *a, **kw):
        figures[str(path).rsplit("/", 1)[-1]] = self
        return real(self, path, *a, **kw)
    monkeypatch.setattr(Figure, "savefig", savefig)
    return figures


def _flat_replay() -> dict:
    xs, imgs = list(range(21)), list(range(7))
    pooled = {ax: {"x": x, "all_mean_iou": [0.0] * len(x), "coverage": [0.0] * len(x),
                   "center_error_median_m": [None] * len(x), "center_error_mean_m": [None] * len(x),
                   "loss_m": {"1.0": [1.0] * len(x)}} for ax, x in (("calls", xs), ("images", imgs))}
    eps = [{"points": [{"calls": x, "images": min(x // 3, 6), "all_mean_iou": 0.0, "coverage": 0.0} for x in xs]}]
    return {"name": "flat", "x_calls": "model_calls", "episodes": eps, "pooled": pooled}


def test_replay_curves_start_at_zero_with_whole_ticks_and_no_legend_on_the_data(tmp_path, monkeypatch):
    figs = _capture(monkeypatch)
    plot_replay(_flat_replay(), tmp_path)
    fig = figs["curves_images.png"]
    iou, cov, err = fig.axes[:3]
    assert -0.5 < iou.get_ylim()[0] <= 0 and iou.get_ylim()[1] >= 10 and -0.5 < cov.get_ylim()[0] <= 0
    for a in (iou, cov, err):
        ticks = [t for t in a.get_xticks() if a.get_xlim()[0] <= t <= a.get_xlim()[1]]
        assert all(float(t).is_integer() for t in ticks), ticks
        assert a.get_legend() is None
    loss = figs["loss_lambda.png"]
    assert all(a.get_legend() is None for a in loss.axes) and loss.legends


def _beh(kind: str, busy: list[str]) -> dict:
    per_bin = {t: [1.0, 0.5] if t in busy else [0.0, 0.0] for t in TOOLS}
    return {"bins": [[0, 4], [4, 8]], "per_bin": per_bin, "calls_kind": kind, "bin_calls": 4,
            "total_per_task": {t: 2.0 if t in busy else 0.0 for t in TOOLS}}


def test_tool_use_keeps_model_calls_and_tool_calls_apart_and_hides_no_tool(tmp_path, monkeypatch):
    figs = _capture(monkeypatch)
    busy = ["capture_image", "move_camera", "submit_positions"]
    plot_behaviour({"vlm": _beh("model_calls", busy), "oracle": _beh("tool_calls", ["submit_positions"])}, tmp_path)
    fig = figs["behaviour_over_calls.png"]
    groups = fig.subfigs
    assert len(groups) == 2
    for sub, kind in zip(groups, ("model calls", "tool calls")):
        labels = {a.get_xlabel().split(" (")[0] for a in sub.axes if a.axison}
        assert labels == {kind}
    vlm = next(a for a in fig.axes if a.get_title() == "vlm")
    # stacked: the three tools' bars in the first bin sit on top of each other, none at the same place
    firsts = sorted((p.get_y(), p.get_height()) for p in vlm.patches if p.get_x() == 0 and p.get_height() > 0)
    assert [round(y, 6) for y, _ in firsts] == [0.0, 1.0, 2.0]
