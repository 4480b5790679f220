"""Model presets for ``spatialscout evaluate --models FILE``: one TOML file naming each model's
agent, endpoint, key variable, effort, limits, prices and concurrency (docs/models.md, "Model
presets").

Each ``[models.NAME]`` table sets the options of one evaluation, written to ``--out/NAME``. A key
is the name of an ``evaluate`` option with ``_`` for ``-`` (the flag's destination: ``base_url``,
``reasoning_effort``, ``workers``, ...; the table :data:`KEYS`), plus ``api_key_env`` (the
environment variable holding the key: the key itself is never in the file) and ``price`` (an inline
``{input_per_mtok, output_per_mtok}`` written to ``--out/NAME/price_table.json``). Each model then
runs exactly as the same flags on the command line would: the file fills the parsed options, and
the one ``evaluate`` code path records them.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import tomllib
from pathlib import Path

from spatialscout_gym.cli.errors import CliError

__all__ = ["KEYS", "load_presets", "preset_args"]

KEYS: dict[str, str] = {
    "agent": "--agent", "base_url": "--base-url", "reasoning_effort": "--reasoning-effort",
    "no_reasoning_effort": "--no-reasoning-effort", "require_effort": "--require-effort",
    "max_tokens": "--max-tokens", "prompt_style": "--prompt", "mode": "--mode", "image_history": "--image-history",
    "image_max_side": "--image-max-side", "price_table": "--price-table", "max_cost_usd": "--max-cost-usd",
    "timeout_s": "--timeout", "attempts": "--attempts", "backoff_s": "--backoff",
    "rate_limit_wait_s": "--rate-limit-wait", "requests_per_minute": "--rpm", "tokens_per_minute": "--tpm",
    "workers": "--workers", "max_concurrency": "--max-concurrency", "request_cache": "--request-cache",
    "stop_after_failures": "--stop-after-failures", "call_budget": "--call-budget",
    "image_budget": "--image-budget", "resolution": "--resolution", "passive_views": "--passive-views",
}
"""Preset keys -> the ``evaluate`` flag each stands for."""
_EXTRA = ("api_key_env", "price")
_PATHS = ("price_table", "request_cache")


def _line_of(text: str, section: str, key: str) -> int:
    """The line (1-based) of ``key`` inside ``[section]`` (0 when not found)."""
    inside = False
    for n, line in enumerate(text.splitlines(), 1):
        head = re.match(r"\s*\[([^\]]+)\]", line)
        if head:
            inside = head.group(1).replace(" ", "").replace('"', "") == section
        elif inside and re.match(rf"\s*\"?{re.escape(key)}\"?\s*=", line):
            return n
    return 0


def load_presets(path: Path) -> dict[str, dict]:
    """``{name: {key: value}}`` from a presets file; one-line :class:`CliError` for a file that
    cannot be read, is not TOML, has no models, or has a key this version does not know (named
    with its line)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"--models {path}: cannot read it ({exc.strerror})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CliError(f"--models {path}: not valid TOML ({exc})") from None
    unknown_top = sorted(set(data) - {"models"})
    if unknown_top:
        raise CliError(f"--models {path}: unknown key {unknown_top[0]!r} (line {_line_of(text, '', unknown_top[0]) or '?'}); "
                       f"expected [models.NAME] tables")
    models = data.get("models")
    if not isinstance(models, dict) or not models or not all(isinstance(v, dict) for v in models.values()):
        raise CliError(f"--models {path}: expected one or more [models.NAME] tables")
    for name, table in models.items():
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
            raise CliError(f"--models {path}: model name {name!r} must be letters, digits, '.', '_' or '-' "
                           f"(it names its directory)")
        for key in table:
            if key not in KEYS and key not in _EXTRA:
                raise CliError(f"--models {path}: unknown key {key!r} in [models.{name}] (line "
                               f"{_line_of(text, f'models.{name}', key) or '?'}); known: "
                               f"{', '.join([*KEYS, *_EXTRA])}")
        if "agent" not in table:
            raise CliError(f"--models {path}: [models.{name}] needs an agent (e.g. agent = \"openai:MODEL\")")
    return models


def preset_args(args: argparse.Namespace, name: str, table: dict, presets_file: Path) -> argparse.Namespace:
    """The parsed options of one preset: the command line's, with the preset's keys set as their
    flags would set them and ``--out`` made ``--out/NAME``."""
    a = copy.copy(args)
    a.models = None
    a.out = Path(args.out) / name
    base = Path(presets_file).parent
    for key, value in table.items():
        if key in _PATHS:
            value = base / str(value)
        if key in KEYS:
            setattr(a, key, value)
    var = table.get("api_key_env")
    if var is not None:
        if not os.environ.get(str(var)):
            raise CliError(f"--models {presets_file}: [models.{name}] reads its key from ${var}, which is not set")
        a.api_key = os.environ[str(var)]
    if "price" in table:
        if "price_table" in table:
            raise CliError(f"--models {presets_file}: [models.{name}] has both price and price_table; give one")
        model = str(table["agent"]).partition(":")[2]
        a.out.mkdir(parents=True, exist_ok=True)
        a.price_table = a.out / "price_table.json"
        a.price_table.write_text(json.dumps({model: table["price"]}, indent=2) + "\n")
    return a
