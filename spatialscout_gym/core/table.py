"""Table-3-style text tables of metric dicts (docs/protocol.md section 9), reused by score/evaluate reports.

Columns: targets N, coverage, then the paper's Table 3 (all targets: mean IoU, > 0, > 0.5, > 0.9;
submitted: the same), in percent with two decimals, then mean and median centre error and the
full-scene loss in metres ("-" where undefined).

>>> m = {"num_targets": 2, "num_submitted": 1, "coverage": 0.5,
...      "all": {"mean_iou": 0.5, "gt_0": 0.5, "gt_50": 0.5, "gt_90": 0.5},
...      "submitted": {"mean_iou": 1.0, "gt_0": 1.0, "gt_50": 1.0, "gt_90": 1.0},
...      "center_error_m": {"mean": 0.0, "median": 0.0, "rmse": 0.0}, "full_scene_loss_m": 2.5}
>>> print(format_table({"demo": m}).splitlines()[2])
demo     2   50.00 |  50.00  50.00  50.00  50.00 | 100.00 100.00 100.00 100.00 | 0.000  0.000   2.500
"""

from __future__ import annotations

from typing import Mapping

__all__ = ["format_table", "format_table_html"]

_VIEW_KEYS = ("mean_iou", "gt_0", "gt_50", "gt_90")


def _pct(x: float) -> str:
    return f"{100.0 * x:6.2f}"


def _metres(x: float | None, width: int) -> str:
    return "-".rjust(width) if x is None else f"{x:{width}.3f}"


def format_table(rows: Mapping[str, Mapping]) -> str:
    """Format ``{row name: M}`` (the metric dicts of :mod:`spatialscout_gym.core.scoring`).

    Returns a multi-line string: two header lines, then one line per row, in the given order.
    """
    name_w = max([len("name")] + [len(str(k)) for k in rows])
    head1 = (f"{'':{name_w}} {'':>5} {'':>7} | {'all targets (%)':<27} | {'submitted targets (%)':<27} "
             f"| {'error (m)':^12} {'loss':>7}")
    head2 = (f"{'name':{name_w}} {'N':>5} {'cov %':>7} | {'mIoU':>6} {'>0':>6} {'>0.5':>6} {'>0.9':>6} "
             f"| {'mIoU':>6} {'>0':>6} {'>0.5':>6} {'>0.9':>6} | {'mean':>5} {'median':>6} {'L':>7}")
    lines = [head1, head2]
    for name, m in rows.items():
        views = " | ".join(" ".join(_pct(m[v][k]) for k in _VIEW_KEYS) for v in ("all", "submitted"))
        err = m["center_error_m"]
        lines.append(f"{str(name):{name_w}} {m['num_targets']:5d} {_pct(m['coverage']):>7} | {views} | "
                     f"{_metres(err['mean'], 5)} {_metres(err['median'], 6)} "
                     f"{_metres(m['full_scene_loss_m'], 7)}")
    return "\n".join(lines)


def _cells(m: Mapping) -> list[str]:
    """One row's cells, as in :func:`format_table`: N, coverage %, 4 + 4 view columns %, mean and
    median centre error (m), loss (m)."""
    err = m["center_error_m"]
    cells = [str(m["num_targets"]), _pct(m["coverage"]).strip()]
    cells += [_pct(m[v][k]).strip() for v in ("all", "submitted") for k in _VIEW_KEYS]
    cells += [_metres(err["mean"], 0).strip(), _metres(err["median"], 0).strip(),
              _metres(m["full_scene_loss_m"], 0).strip()]
    return cells


def format_table_html(rows: Mapping[str, Mapping]) -> str:
    """The table of :func:`format_table` as an HTML ``<table>`` (names escaped), with grouped
    headers: all targets (%), submitted targets (%), centre error (m), loss (m).

    >>> m = {"num_targets": 2, "num_submitted": 1, "coverage": 0.5,
    ...      "all": {"mean_iou": 0.5, "gt_0": 0.5, "gt_50": 0.5, "gt_90": 0.5},
    ...      "submitted": {"mean_iou": 1.0, "gt_0": 1.0, "gt_50": 1.0, "gt_90": 1.0},
    ...      "center_error_m": {"mean": None, "median": None, "rmse": None}, "full_scene_loss_m": 2.5}
    >>> "<td>demo</td><td>2</td><td>50.00</td>" in format_table_html({"demo": m})
    True
    """
    from html import escape
    views = "".join(f"<th>{h}</th>" for h in ("mIoU", "&gt;0", "&gt;0.5", "&gt;0.9"))
    out = ["<table class='table3'>",
           "<tr><th rowspan='2'>name</th><th rowspan='2'>N</th><th rowspan='2'>coverage %</th>"
           "<th colspan='4'>all targets (%)</th><th colspan='4'>submitted targets (%)</th>"
           "<th colspan='2'>centre error (m)</th><th rowspan='2'>loss L (m)</th></tr>",
           f"<tr>{views}{views}<th>mean</th><th>median</th></tr>"]
    for name, m in rows.items():
        out.append(f"<tr><td>{escape(str(name))}</td>" + "".join(f"<td>{c}</td>" for c in _cells(m)) + "</tr>")
    out.append("</table>")
    return "\n".join(out)
