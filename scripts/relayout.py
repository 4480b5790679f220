#!/usr/bin/env python
"""Move the package into the layout that shows its architecture (docs/architecture.md "Layers").

    python scripts/relayout.py            # do it (in a git work tree; commit afterwards)
    python scripts/relayout.py --dry-run  # print the plan only
    python scripts/relayout.py --commit   # in a clean tree: commit the renames alone, then the rest,
                                          # so that `git log --follow` sees each move as a rename

* the next-best-view control stack goes to ``spatialscout_gym/nbv/`` (``wrappers/nbv.py`` becomes
  ``nbv/wrapper.py``, ``wrappers/nbv_<x>.py`` becomes ``nbv/<x>.py``, the PPO trainer and the SB3
  adapter come from ``baselines/``);
* the VLM conversation layer goes to ``spatialscout_gym/conversation/`` (messages, codecs, prompt,
  replies, delivered images, tool schemas, conversation spaces, the provider clients and the request
  cache);
* the servers go to ``spatialscout_gym/servers/`` (the MCP server; the viewer with its play page);
* ``wrappers/`` keeps the Gymnasium wrappers.

Files move with ``git mv`` by glob rules, so modules added since these rules were written (another
``wrappers/nbv_*.py``) move too. Every ``spatialscout_gym`` module name in the package, tests,
examples, benchmarks, scripts, docs, README and pyproject is rewritten: imports (``from A import
module`` forms and relative imports included), entry-point strings (``"pkg.module:attr"``),
``mock.patch``/``monkeypatch`` strings, ``resources.files`` names, and module paths
(``wrappers/nbv_core.py``). Each old module path keeps a pointer module for one release: it warns
(``DeprecationWarning``) and puts the new module into ``sys.modules`` under the old name, so
``import old.path``, ``from old.path import X`` and ``mock.patch("old.path.X")`` all reach the new
module. The layer table and the layout note of docs/architecture.md (between their markers) are
replaced by the new layout's, and ``tests/test_old_import_paths.py`` is written to check every pointer.

Re-runnable: moved sources are pointers afterwards and are skipped, rewritten names no longer
match, so a second run changes nothing. It refuses to start when a target exists that is not the
result of an earlier run, or when the work tree has a module both a rule and a pointer claim.
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = "spatialscout_gym"
PACKAGE = ROOT / PKG

# (glob under the package, target): "{stem}" is the file's stem, "{rest}" what the glob's "*" matched;
# a rule ending in "/**" moves a whole folder. First matching rule wins.
RULES: list[tuple[str, str]] = [
    ("wrappers/nbv.py", "nbv/wrapper.py"),
    ("wrappers/nbv_*.py", "nbv/{rest}.py"),
    ("baselines/train_nbv.py", "nbv/train.py"),
    ("baselines/sb3_vec.py", "nbv/sb3_vec.py"),
    ("baselines/train_record.py", "nbv/train_record.py"),
    ("baselines/rllib_nbv.py", "nbv/rllib_train.py"),
    ("baselines/rllib_module.py", "nbv/rllib_module.py"),
    ("wrappers/conversation.py", "conversation/messages.py"),
    ("wrappers/conversation_*.py", "conversation/{rest}.py"),
    ("wrappers/codecs/**", "conversation/codecs/**"),
    ("wrappers/prompt.py", "conversation/prompt.py"),
    ("wrappers/replies.py", "conversation/replies.py"),
    ("wrappers/images.py", "conversation/images.py"),
    ("wrappers/schemas.py", "conversation/schemas.py"),
    ("baselines/provider*.py", "conversation/provider{rest}.py"),
    ("baselines/request_cache.py", "conversation/request_cache.py"),
    ("eval/mcp*.py", "servers/mcp{rest}.py"),
    ("viewer/**", "servers/viewer/**"),
]

NEW_PACKAGES = {
    "nbv": '"""Next-best-view control (docs/architecture.md "nbv"): settings and spaces, motions, observation\n'
           'features, the one NBV core and its ports, the Gymnasium wrapper and env, mappers, vector envs, the\n'
           'registration of the NBV ids, the files beside a trained policy, and PPO training (SB3 and RLlib)."""\n',
    "conversation": '"""The VLM conversation layer (docs/architecture.md "conversation"): messages in neutral form,\n'
                    'one codec per wire format, the prompt, reply text, delivered images, tool schemas, the\n'
                    'provider clients and the request cache."""\n',
    "servers": '"""Servers (docs/architecture.md "servers"): the MCP server and the viewer with its play page,\n'
               'all on 127.0.0.1."""\n',
}

REWRITTEN = ["spatialscout_gym", "tests", "examples", "benchmarks", "scripts", "docs", "README.md", "pyproject.toml"]
SUFFIXES = {".py", ".md", ".toml", ".sh", ".txt", ".cfg", ".yaml", ".yml", ".ini", ".html", ".js"}
COMPAT_TEST = ROOT / "tests" / "test_old_import_paths.py"
ARCHITECTURE = ROOT / "docs" / "architecture.md"

LAYERS = """\
| layer | holds | may import |
|---|---|---|
| core | task frame and poses, pinhole camera and pixel conventions, triangulation, the scorer, scene spec types and their JSON files, bounds, error types | core |
| scenes | the procedural generator, the frozen catalog, the ManiSkill dataset adapter, scene export and statistics | core, scenes |
| render | a SAPIEN scene built from a `SceneSpec`; RGB captures (depth and segmentation for privileged use); batched camera groups; the device check | core, render |
| episode | the ten tools as one state machine: validation, budgets, frames, the accepted map, trace events. Renderer-agnostic: it takes any object with the small interface of `core/renderer_api.py`, so it is tested without Vulkan | core, episode |
| envs | `EpisodeSession` (scene + renderer + ground truth + episode), `SpatialScoutEnv(gymnasium.Env)`, the run directory, registration of the tool-level env ids | core, scenes, render, episode, envs |
| nbv | next-best-view control for RL: settings and spaces, motions, features, the NBV core and its ports, `NextBestViewWrapper`, NBV-v1, mappers, vector envs, the NBV ids, policy files, the SB3 adapter and the PPO trainer | core, scenes, render, episode, envs, nbv |
| conversation | the VLM conversation: neutral messages, one codec per wire format, prompt, reply text, delivered images, tool schemas, the provider clients, the request cache | core, episode, conversation |
| wrappers | the Gymnasium wrappers a model steps: `ToolCallWrapper` (model replies in, model messages out, model-call budget) and the tool-call action encoding | core, scenes, render, episode, envs, nbv, conversation, wrappers |
| baselines | the agents: inventory-only, oracles, NBV agents, the VLM agent; agents by name and kind | core, scenes, render, episode, envs, nbv, conversation, wrappers, baselines |
| eval | many episodes (local processes, or Ray), resume, verification, replay, reports, figures, statistics, the leaderboard | core, scenes, render, episode, envs, nbv, conversation, wrappers, baselines, eval |
| servers | the MCP server; the viewer of a run or evaluation directory, its local server and the play page | core, scenes, render, episode, envs, nbv, conversation, wrappers, baselines, eval, servers |
| cli | `spatialscout` and one module per command | everything |
| integrations | other frameworks' entry points: the Inspect AI task (`integrations/inspect_task.py`, [inspect.md](inspect.md)); each imports its framework, `import spatialscout_gym` never imports them | everything |
"""
LAYOUT = """\
The layout shows the architecture: the NBV control stack is `nbv/`, the VLM conversation layer
`conversation/`, the MCP server and the viewer `servers/`, and `wrappers/` holds the Gymnasium
wrappers. Modules moved there keep their old import paths for one release: a pointer module at the
old path warns (`DeprecationWarning`) and hands out the new module (`tests/test_old_import_paths.py`).
"""

SWAPPED = {"layers": LAYERS, "layout": LAYOUT}
"""Blocks of docs/architecture.md between ``<!-- NAME:begin -->`` and ``<!-- NAME:end -->``, replaced."""


POINTER = '''"""Moved to :mod:`{new}`. This import path works for one release and warns
(``DeprecationWarning``); import from the new path."""

import importlib
import sys
import warnings

_MOVED_TO = "{new}"
warnings.warn(f"{{__name__}} moved to {{_MOVED_TO}}; import it from there (the old path goes in the next "
              "release)", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module(_MOVED_TO)
'''

PACKAGE_POINTER = '''"""Moved to :mod:`{new}`. This import path, and those of its modules, work for one
release and warn (``DeprecationWarning``); import from the new path."""

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

_MOVED_TO = "{new}"
warnings.warn(f"{{__name__}} moved to {{_MOVED_TO}}; import it from there (the old path goes in the next "
              "release)", DeprecationWarning, stacklevel=2)


class _OldNames(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``<old>.<module>`` is the module ``<new>.<module>`` itself (never a second copy of it)."""

    def __init__(self, old: str) -> None:
        self.old = old

    def find_spec(self, name, path=None, target=None):
        return importlib.util.spec_from_loader(name, self) if name.startswith(self.old + ".") else None

    def create_module(self, spec):
        return importlib.import_module(_MOVED_TO + spec.name[len(self.old):])

    def exec_module(self, module):
        pass


if not any(getattr(f, "old", None) == __name__ for f in sys.meta_path):  # once per process
    sys.meta_path.insert(0, _OldNames(__name__))
sys.modules[__name__] = importlib.import_module(_MOVED_TO)
'''


@dataclass(frozen=True)
class Move:
    old: Path   # relative to the package: a file, or a folder for "/**" rules
    new: Path

    @property
    def is_dir(self) -> bool:
        return (PACKAGE / self.old).is_dir() or (PACKAGE / self.new).is_dir()


def module_of(rel: Path) -> str:
    """``wrappers/nbv_core.py`` -> ``spatialscout_gym.wrappers.nbv_core`` (a folder: its package)."""
    parts = rel.with_suffix("").parts if rel.suffix == ".py" else rel.parts
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join((PKG, *parts))


def is_pointer(path: Path) -> bool:
    init = path / "__init__.py" if path.is_dir() else path
    return init.is_file() and re.search(r"^_MOVED_TO = ", init.read_text(encoding="utf-8"), re.M) is not None


def plan() -> list[Move]:
    """The moves still to do, by the rules, over what the package holds now."""
    moves: list[Move] = []
    claimed: set[Path] = set()
    files = sorted(p.relative_to(PACKAGE) for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)
    for pattern, target in RULES:
        if pattern.endswith("/**"):
            src = Path(pattern[:-3])
            if (PACKAGE / src).is_dir() and not is_pointer(PACKAGE / src):
                moves.append(Move(src, Path(target[:-3])))
                claimed |= {f for f in files if f.is_relative_to(src)}
            continue
        prefix = pattern.split("*")[0]
        for rel in files:
            if rel in claimed or not fnmatch.fnmatchcase(rel.as_posix(), pattern) or is_pointer(PACKAGE / rel):
                continue
            rest = rel.as_posix()[len(prefix):-len(".py")] if "*" in pattern else ""
            moves.append(Move(rel, Path(target.format(stem=rel.stem, rest=rest))))
            claimed.add(rel)
    return moves


def check(moves: list[Move]) -> None:
    targets: dict[Path, Path] = {}
    for m in moves:
        if m.new in targets:
            sys.exit(f"relayout: {m.old} and {targets[m.new]} would both move to {m.new}; rename one and rerun")
        targets[m.new] = m.old
        if (PACKAGE / m.new).exists():
            sys.exit(f"relayout: {m.new} exists already (not from an earlier run: {m.old} is not a pointer); "
                     f"move or merge it by hand and rerun")


def all_moves() -> list[tuple[str, str]]:
    """Every old module name -> new one, from the pointers in the tree (earlier runs and this one),
    longest first; a moved folder gives one pair per module in it."""
    pairs: dict[str, str] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "__pycache__" in path.parts or not is_pointer(path):
            continue
        new = re.search(r'^_MOVED_TO = "([\w.]+)"', path.read_text(encoding="utf-8"), re.M).group(1)
        old = module_of(path.relative_to(PACKAGE))
        pairs[old] = new
        if path.name == "__init__.py":          # a moved folder: its modules
            new_dir = ROOT.joinpath(*new.split("."))
            for sub in sorted(new_dir.rglob("*.py")):
                parts = sub.relative_to(new_dir).with_suffix("").parts
                tail = "".join("." + p for p in (parts[:-1] if parts[-1] == "__init__" else parts))
                if tail and "__pycache__" not in parts:
                    pairs[old + tail] = new + tail
    return sorted(pairs.items(), key=lambda kv: -len(kv[0]))


def git(*args: str) -> None:
    subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True)


def tracked(path: Path) -> bool:
    out = subprocess.run(["git", "ls-files", "--error-unmatch", str(path)], cwd=ROOT, capture_output=True)
    return out.returncode == 0


def absolute_relative_imports() -> int:
    """Rewrite relative imports in the package as absolute ones (by the modules' current names), so
    that the files can move; returns how many statements changed."""
    changed = 0
    for path in sorted(PACKAGE.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        text = path.read_text(encoding="utf-8")
        if not re.search(r"^\s*from \.", text, re.M):
            continue
        here = module_of(path.relative_to(PACKAGE)).split(".")
        if path.name != "__init__.py":
            here = here[:-1]
        lines = text.splitlines(keepends=True)
        for node in sorted((n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.ImportFrom) and n.level),
                           key=lambda n: -n.lineno):
            base = here[:len(here) - (node.level - 1)]
            module = ".".join(base + ([node.module] if node.module else []))
            stmt = ast.unparse(ast.ImportFrom(module=module, names=node.names, level=0))
            first = lines[node.lineno - 1]
            indent = first[:len(first) - len(first.lstrip())]
            lines[node.lineno - 1:node.end_lineno] = [indent + stmt + "\n"]
            changed += 1
        path.write_text("".join(lines), encoding="utf-8")
    return changed


def split_module_imports(text: str, moved: dict[str, str]) -> tuple[str, int]:
    """``from pkg import moved_module`` -> ``from new_parent import new_leaf as moved_module`` (the
    statement is split when it also imports names that did not move)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text, 0
    changed = 0
    lines = text.splitlines(keepends=True)
    for node in sorted((n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0 and n.module),
                       key=lambda n: -n.lineno):
        hits = [a for a in node.names if f"{node.module}.{a.name}" in moved]
        if not hits:
            continue
        first = lines[node.lineno - 1]
        indent = first[:len(first) - len(first.lstrip())]
        if first[len(indent):].split()[0] != "from":
            continue                                # shares its line with other code: left to the reader
        stmts = []
        rest = [a for a in node.names if a not in hits]
        if rest:
            stmts.append(ast.unparse(ast.ImportFrom(module=node.module, names=rest, level=0)))
        for a in hits:
            parent, _, leaf = moved[f"{node.module}.{a.name}"].rpartition(".")
            name = a.asname or a.name
            stmts.append(f"from {parent} import {leaf}" + ("" if name == leaf else f" as {name}"))
        lines[node.lineno - 1:node.end_lineno] = [indent + s + "\n" for s in stmts]
        changed += 1
    return "".join(lines), changed


def rewrite_names(pairs: list[tuple[str, str]]) -> dict[str, int]:
    """Rewrite module names and module paths in every file of :data:`REWRITTEN`; returns
    ``{file: number of changes}``."""
    moved = dict(pairs)
    dotted = re.compile(r"(?<![\w.])(" + "|".join(re.escape(o) for o, _ in pairs) + r")(?![\w])")
    path_pairs = []
    for old, new in pairs:
        o, n = old.split(".")[1:], new.split(".")[1:]
        is_pkg = ROOT.joinpath(*new.split("."), "__init__.py").is_file()
        path_pairs.append(("/".join(o) + ("/" if is_pkg else ".py"), "/".join(n) + ("/" if is_pkg else ".py")))
    path_pairs.sort(key=lambda kv: -len(kv[0]))
    paths = re.compile(r"(?<![\w./-])((?:spatialscout_gym/)?)(" + "|".join(re.escape(o) for o, _ in path_pairs)
                       + r")(?![\w])")
    path_map = dict(path_pairs)
    counts: dict[str, int] = {}
    files = []
    for name in REWRITTEN:
        top = ROOT / name
        files += [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file()) if top.is_dir() else []
    for path in files:
        if path.suffix not in SUFFIXES or "__pycache__" in path.parts or path == Path(__file__).resolve() \
                or path == COMPAT_TEST or (path.suffix == ".py" and is_pointer(path)):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        new, n0 = split_module_imports(text, moved) if path.suffix == ".py" else (text, 0)
        new, n1 = dotted.subn(lambda m: moved[m.group(1)], new)
        new, n2 = paths.subn(lambda m: m.group(1) + path_map[m.group(2)], new)
        if new != text:
            path.write_text(new, encoding="utf-8")
            counts[path.relative_to(ROOT).as_posix()] = n0 + n1 + n2
    return counts


def swap_doc_blocks() -> bool:
    text = new = ARCHITECTURE.read_text(encoding="utf-8")
    for name, block in SWAPPED.items():
        begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
        if begin not in new or end not in new:
            sys.exit(f"relayout: {ARCHITECTURE.relative_to(ROOT)} lacks its {begin} ... {end} markers")
        head, rest = new.split(begin, 1)
        new = head + begin + "\n" + block + end + rest.split(end, 1)[1]
    if new != text:
        ARCHITECTURE.write_text(new, encoding="utf-8")
    return new != text


def write_compat_test(pairs: list[tuple[str, str]]) -> None:
    listed = "\n".join(f"    ({o!r}, {n!r})," for o, n in sorted(pairs))
    COMPAT_TEST.write_text(f'''"""Every module that moved keeps its old import path for one release: importing it warns
(``DeprecationWarning``) and gives the new module itself, so ``from old import X`` and
``mock.patch("old.X")`` reach the code that runs. Written by scripts/relayout.py."""

from __future__ import annotations

import importlib
import sys
import warnings
from unittest import mock

import pytest

MOVED = [
{listed}
]


@pytest.mark.parametrize(("old", "new"), MOVED)
def test_the_old_path_warns_and_is_the_new_module(old, new):
    module = importlib.import_module(new)
    saved = {{k: v for k, v in sys.modules.items() if k == old or k.startswith(old + ".")}}
    for k in saved:
        del sys.modules[k]
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert importlib.import_module(old) is module
        assert any(issubclass(c.category, DeprecationWarning) and new in str(c.message) for c in caught) \\
            or any(old.startswith(o + ".") for o, _ in MOVED)      # a module of a moved folder: its folder warned
    finally:
        sys.modules.update(saved)


def test_a_patch_on_an_old_path_reaches_the_new_module():
    old, new = next((o, n) for o, n in MOVED if o.endswith(".nbv_core"))
    module = importlib.import_module(new)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with mock.patch(old + ".NBVCore", "patched"):
            assert module.NBVCore == "patched"
    assert module.NBVCore != "patched"
''', encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
    parser.add_argument("--commit", action="store_true",
                        help="commit twice (the renames alone, then pointers and rewritten names); needs a clean tree")
    args = parser.parse_args(argv)
    if args.commit and subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                                      capture_output=True, text=True, check=True).stdout.strip():
        sys.exit("relayout: --commit needs a clean work tree (commit or stash your changes first)")
    t0 = time.perf_counter()
    moves = plan()
    check(moves)
    for m in moves:
        print(f"move {m.old.as_posix()}{'/' if (PACKAGE / m.old).is_dir() else ''} -> {m.new.as_posix()}")
    if args.dry_run:
        return 0
    n_rel = absolute_relative_imports()
    for m in moves:
        src, dst = PACKAGE / m.old, PACKAGE / m.new
        dst.parent.mkdir(parents=True, exist_ok=True)
        if tracked(src):
            git("mv", str(src), str(dst))
        else:
            src.rename(dst)
            git("add", str(dst))
    if args.commit and moves:
        git("commit", "-q", "-m", "Move modules into nbv/, conversation/ and servers/ (renames only; the next "
            "commit rewrites the imports and leaves pointers at the old paths)")
    for m in moves:
        src, dst = PACKAGE / m.old, PACKAGE / m.new
        new_module = module_of(m.new)
        if dst.is_dir():
            src.mkdir(exist_ok=True)
            (src / "__init__.py").write_text(PACKAGE_POINTER.format(new=new_module), encoding="utf-8")
            for cache in dst.rglob("__pycache__"):
                subprocess.run(["rm", "-rf", str(cache)], check=True)
        else:
            src.write_text(POINTER.format(new=new_module), encoding="utf-8")
    created = []
    for name, doc in NEW_PACKAGES.items():
        init = PACKAGE / name / "__init__.py"
        if (PACKAGE / name).is_dir() and not init.exists():
            init.write_text(doc, encoding="utf-8")
            created.append(init.relative_to(ROOT).as_posix())
    pairs = all_moves()
    counts = rewrite_names(pairs) if pairs else {}
    swapped = swap_doc_blocks()
    if pairs:
        write_compat_test(pairs)
    git("add", "-A", "--", PKG, "tests", "docs", "scripts", "benchmarks", "pyproject.toml", "README.md",
        *(["examples"] if (ROOT / "examples").is_dir() else []))
    print(f"relative imports made absolute: {n_rel}")
    print(f"new package files: {', '.join(created) or 'none'}")
    print(f"names rewritten: {sum(counts.values())} in {len(counts)} files")
    for name, n in sorted(counts.items()):
        print(f"  {name}: {n}")
    print(f"layer table and layout note of docs/architecture.md: {'replaced' if swapped else 'already the new ones'}")
    rows = set(re.findall(r"^\| (\w+) \|", LAYERS, re.M)) - {"layer"}
    unplaced = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()
                      and not is_pointer(p) and p.name not in rows)
    if unplaced:
        print(f"WARNING: subpackages without a row in the new layer table: {', '.join(unplaced)}; add each to "
              f"LAYERS in scripts/relayout.py (and docs/architecture.md), or tests/test_layers.py fails")
    print(f"old import paths kept (pointers): {len(pairs)}; checked by {COMPAT_TEST.relative_to(ROOT)}")
    if args.commit and moves:
        git("commit", "-q", "-m", "Rewrite imports, entry points and paths for the new layout; pointers at the old "
            "import paths for one release; docs/architecture.md's layer table for the new layout")
    print(f"done in {time.perf_counter() - t0:.1f} s: moves {len(moves)}; now run `ruff check .` and the tests"
          + ("" if args.commit else ", then commit"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
