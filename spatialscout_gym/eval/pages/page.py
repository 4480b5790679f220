"""The one writer of the package's static HTML pages (the evaluation report's ``index.html`` and the
leaderboard's): one head, one style sheet, one way to write the file. Pages are self-contained
(relative links only, no external resources) so a site can be copied or published whole; every
text a page shows from a run is escaped by its caller with :func:`html.escape`."""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Sequence

from spatialscout_gym.eval.layout import publish_text

__all__ = ["STYLE", "render_page", "write_page"]

STYLE = (
    # a laptop's width (1280 px and less): text wraps, wide tables scroll inside their own box with
    # the first column kept in view, intervals go under their estimate
    "body{font-family:sans-serif;margin:16px;max-width:1240px}"
    "pre{background:#f6f6f6;padding:8px;overflow-x:auto}.wide{overflow-x:auto;max-width:100%}"
    "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;padding:2px 5px;text-align:right}"
    "th{max-width:6em;white-space:normal;background:#eef}"
    "td:first-child,th:first-child{text-align:left;position:sticky;left:0;background:#fff;min-width:8em;max-width:14em;"
    "overflow-wrap:anywhere}th:first-child{background:#eef}"
    "table.sortable th{cursor:pointer}td .iv{display:block;color:#666;font-size:11px;white-space:nowrap}"
    "tr.ref td{color:#555;background:#f7f7f7}img{max-width:100%}.note{color:#555;font-size:13px}")
"""The style every page shares: laptop-width body, compact tables (wide tables scroll in ``.wide``)."""


def render_page(title: str, body: Sequence[str], *, script: str | None = None) -> str:
    """A whole HTML document: ``title`` (plain text, escaped here), ``body`` (HTML fragments, already
    escaped by the caller), and an optional inline ``script`` run at the end of the body."""
    parts = ["<!doctype html><html lang='en'><head><meta charset='utf-8'>",
             "<meta name='viewport' content='width=device-width, initial-scale=1'>",
             f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>", *body]
    if script:
        parts.append(f"<script>{script}</script>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write_page(path: str | os.PathLike, title: str, body: Sequence[str], *, script: str | None = None) -> Path:
    """Write :func:`render_page` to ``path`` atomically (mode 0644, as every published output)."""
    return publish_text(path, render_page(title, body, script=script))
