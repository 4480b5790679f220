"""Model presets for ``spatialscout evaluate --models FILE``: one TOML file naming each model's
agent, endpoint, key variable, effort, limits, prices and concurrency (docs/models.md, "Model
presets").

Each ``[models.NAME]`` table sets the options of one evaluation, written to ``--out/NAME``. A key
is the name of an ``evaluate`` option with ``_`` for ``-`` (the flag's destination: ``base_url``,
``reasoning_effort``, ``workers``, ...; the table :data:`KEYS`), plus ``api_key_env`` (the
environment variable holding the key: the key itself is never in the file) and ``price`` (an inline
``{input_per_mtok, output_per_mtok}`` written to ``--out/NAME/price_table.json``). Each model then
runs exactly as the same flags on the command line would: every value goes through its flag's own
``type`` and ``choices`` in ``evaluate``'s parser (a bad value is one line naming the file, the
preset, the key and its line, before any model runs), the file fills the parsed options, and the
one ``evaluate`` code path records them.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
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
PRESETS_PLAN = ".presets.json"
"""``--out/.presets.json``: the models of a presets run in order (``{"models": [NAME, ...]}``), so
``leaderboard --watch`` shows the models not started yet as waiting."""
_PATHS = ("price_table", "request_cache")


def _line_of(text: str, section: str, key: str) -> int:
    """The line (1-based) of ``key`` inside ``[section]`` (0 when not found). ``tomllib`` gives no
    line numbers for values, so the text is scanned: a key written as ``key = ...`` under its
    ``[section]`` header is found; one inside an inline table or written as a dotted key is not
    (the message then says ``line ?``)."""
    inside = False
    for n, line in enumerate(text.splitlines(), 1):
        head = re.match(r"\s*\[([^\]]+)\]", line)
        if head:
            inside = head.group(1).replace(" ", "").replace('"', "") == section
        elif inside and re.match(rf"\s*\"?{re.escape(key)}\"?\s*=", line):
            return n
    return 0


NAME_MAX = 100
"""Characters a preset's name may have: it names its directory under ``--out``."""
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def _name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a preset (and its directory ``--out/NAME``), or None: letters,
    digits, ``.``, ``_`` and ``-``, not starting with ``.`` or ``-`` (so never ``.``, ``..``, a
    hidden name or a path separator: nothing is written outside ``--out``), at most :data:`NAME_MAX`."""
    shown = name if len(name) <= 40 else f"{name[:40]}... ({len(name)} characters)"
    if len(name) > NAME_MAX:
        return f"model name {shown!r} is longer than {NAME_MAX} characters (it names its directory)"
    if not _NAME.fullmatch(name):
        return (f"model name {shown!r} must be letters, digits, '.', '_' or '-', not starting with '.' or '-' "
                f"(it names its directory under --out)")
    return None


def load_presets(path: Path, parser: argparse.ArgumentParser) -> dict[str, dict]:
    """``{name: {key: value}}`` from a presets file; one-line :class:`CliError` for a file that
    cannot be read (or is not a regular file of at most 1 MiB, so a FIFO or a device never blocks),
    is not UTF-8 or not TOML (nested past the parser's depth included), has no models, a name
    that cannot name a directory inside ``--out``, or a key this version does not know (named
    with its line). ``parser`` is ``evaluate``'s own: each value is converted and checked by the
    ``type`` and ``choices`` its flag has there."""
    from spatialscout_gym.cli.input_files import read_text
    text = read_text(Path(path), "--models")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CliError(f"--models {path}: not valid TOML ({exc})") from None
    except RecursionError:
        raise CliError(f"--models {path}: not valid TOML here (tables or arrays nested too deeply for the "
                       f"parser)") from None
    unknown_top = sorted(set(data) - {"models"})
    if unknown_top:
        raise CliError(f"--models {path}: unknown key {unknown_top[0]!r} (line {_line_of(text, '', unknown_top[0]) or '?'}); "
                       f"expected [models.NAME] tables")
    models = data.get("models")
    if not isinstance(models, dict) or not models or not all(isinstance(v, dict) for v in models.values()):
        raise CliError(f"--models {path}: expected one or more [models.NAME] tables")
    for name, table in models.items():
        problem = _name_problem(name)
        if problem:
            raise CliError(f"--models {path}: {problem}")
        for key in table:
            if key not in KEYS and key not in _EXTRA:
                raise CliError(f"--models {path}: unknown key {key!r} in [models.{name}] (line "
                               f"{_line_of(text, f'models.{name}', key) or '?'}); known: "
                               f"{', '.join([*KEYS, *_EXTRA])}")
        if "agent" not in table:
            raise CliError(f"--models {path}: [models.{name}] needs an agent (e.g. agent = \"openai:MODEL\")")
    return {name: _parse_table(Path(path), text, name, table, parser) for name, table in models.items()}


def _shown(value: object) -> str:
    text = json.dumps(value) if isinstance(value, (str, int, float, bool, list, dict)) else str(value)
    return text if len(text) <= 60 else f"{text[:60]}... ({len(text)} characters)"


_TOML_TYPE = {bool: "a boolean", str: "a string", int: "an integer", float: "a float", list: "an array",
              dict: "a table"}


def _toml_type(value: object) -> str:
    return _TOML_TYPE.get(type(value), f"a TOML {type(value).__name__}")


def _parse_value(parser: argparse.ArgumentParser, action: argparse.Action, value: object, where: str) -> object:
    """``value`` as its flag would parse it: a boolean for a switch (``--require-effort``); else
    a string, or a number where the flag takes one, put through the flag's ``type`` and ``choices``
    (an array only for a flag of several values, ``--backoff``)."""
    flag = action.option_strings[0]
    if action.nargs == 0:
        if not isinstance(value, bool):
            raise CliError(f"{where}: expected true or false (the switch {flag}), got {_toml_type(value)} {_shown(value)}")
        return value
    several = action.nargs in ("+", "*")
    if isinstance(value, list) and not several:
        raise CliError(f"{where}: expected one value as {flag} takes, got an array {_shown(value)}")
    items = value if isinstance(value, list) else [value]
    if not items:
        raise CliError(f"{where}: expected one or more values as {flag} takes, got an empty array")
    numbers = action.type not in (None, Path)
    strings = []
    for item in items:
        if isinstance(item, str):
            strings.append(item)
        elif numbers and isinstance(item, (int, float)) and not isinstance(item, bool):
            strings.append(str(item))
        else:
            wanted = "a number or a string" if numbers else "a string"
            raise CliError(f"{where}: expected {wanted} as {flag} takes, got {_toml_type(item)} {_shown(item)}")
    try:
        parsed = []
        for text in strings:
            one = parser._get_value(action, text)
            parser._check_value(action, one)
            parsed.append(one)
    except argparse.ArgumentError as exc:
        raise CliError(f"{where}: {exc}") from None
    return parsed if several else parsed[0]


def _price_problem(price: object) -> str | None:
    """Why an inline ``price`` is not a price-table entry, or None (the rule of the price table)."""
    from spatialscout_gym.baselines.vlm import OPTIONAL_PRICES   # the price table's own keys
    known = ("input_per_mtok", "output_per_mtok", *OPTIONAL_PRICES)
    if not isinstance(price, dict):
        return f"expected an inline table {{input_per_mtok = X, output_per_mtok = Y}}, got {_toml_type(price)}"
    missing = [k for k in known[:2] if k not in price]
    extra = [k for k in price if k not in known]
    bad = [k for k, v in price.items() if not (isinstance(v, (int, float)) and not isinstance(v, bool)
                                               and math.isfinite(v) and v >= 0)]
    if missing or extra or bad:
        return (f"expected numbers >= 0 for {', '.join(known[:2])} (optional {', '.join(OPTIONAL_PRICES)}); "
                + "; ".join(f"{what} {', '.join(keys)}" for what, keys in
                            (("missing", missing), ("unknown", extra), ("not a number >= 0:", bad)) if keys))
    return None


def _parse_table(path: Path, text: str, name: str, table: dict, parser: argparse.ArgumentParser) -> dict:
    """One preset's keys parsed as their flags: ``{key: value}`` ready to set on the parsed options
    (paths made relative to the presets file); a one-line :class:`CliError` naming the file, the
    preset, the key and its line for a value its flag would refuse, so a bad value in the last
    preset stops the command before the first model runs."""
    from spatialscout_gym.cli.input_files import check_small_file
    actions = {a.dest: a for a in parser._actions if a.option_strings}
    out: dict = {}
    for key, value in table.items():
        where = f"--models {path}: [models.{name}] {key} (line {_line_of(text, f'models.{name}', key) or '?'})"
        if key == "api_key_env":
            if not isinstance(value, str) or not value:
                raise CliError(f"{where}: expected the name of an environment variable, got {_toml_type(value)} "
                               f"{_shown(value)}")
            out[key] = value
        elif key == "price":
            problem = _price_problem(value)
            if problem:
                raise CliError(f"{where}: {problem}")
            out[key] = value
        else:
            out[key] = _parse_value(parser, actions[key], value, where)
            if key in _PATHS:
                out[key] = path.parent / out[key]
            if key == "price_table":
                check_small_file(out[key], where + ": price table", utf8=True)
    if not out.get("agent"):
        raise CliError(f"--models {path}: [models.{name}] needs an agent (e.g. agent = \"openai:MODEL\")")
    return out


def preset_args(args: argparse.Namespace, name: str, table: dict, presets_file: Path) -> argparse.Namespace:
    """The parsed options of one preset (a table of :func:`load_presets`): the command line's, with
    the preset's keys set as their flags set them and ``--out`` made ``--out/NAME``."""
    a = copy.copy(args)
    a.models = None
    a.out = Path(args.out) / name
    for key, value in table.items():   # parsed by load_presets: paths already relative to the file
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


def hold_presets_run(out: Path, names: list[str]) -> int:
    """Hold ``OUT/.evaluate.lock`` for a whole presets run and list its models in
    :data:`PRESETS_PLAN`, so that ``leaderboard --watch`` follows the run from its first model to its
    last (between two models no model directory is locked). Returns the lock's descriptor; closing
    it releases the lock (so does the process's death, even by ``kill -9``)."""
    import fcntl

    from spatialscout_gym.eval.running.evaluate import _LOCK_FILE
    out.mkdir(parents=True, exist_ok=True)
    fd = os.open(out / _LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise CliError(f"{out} is being written by another `evaluate --models`; wait for it or stop it") from None
    tmp = out / (PRESETS_PLAN + ".tmp")
    tmp.write_text(json.dumps({"models": names}) + "\n")
    os.replace(tmp, out / PRESETS_PLAN)
    return fd


def presets_plan(out: Path) -> list[str] | None:
    """The model names :func:`hold_presets_run` listed in ``out`` (None when it holds no such list)."""
    try:
        models = json.loads((out / PRESETS_PLAN).read_text(encoding="utf-8"))["models"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return [m for m in models if isinstance(m, str) and _name_problem(m) is None] if isinstance(models, list) else None
