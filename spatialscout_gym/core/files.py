"""Scene files for the scorer: ``ground_truth.json``, ``predictions.json`` (docs/protocol.md section 6).

* ``ground_truth.json``: ``{"scene_id", "radius_m", "world_from_task": {"rotation": 3x3,
  "translation": [3]}, "targets": [{"id", "category", "group", "center": [3] (task frame, m),
  "box_min": [3], "box_max": [3] (world AABB, m)}]}``; more keys are allowed.
  :meth:`spatialscout_gym.core.spec.SceneSpec.ground_truth_dict` writes it.
* ``predictions.json``: ``{"positions": {"<id>": [x, y, z], ...}}`` (task frame, m).

Every problem raises :class:`SceneFileError`, a ``ValueError`` whose message names the file and
the problem on one line (the CLI prints it as is). JSON ``NaN``/``Infinity`` and numbers that
overflow to infinity are rejected, and so are duplicate keys.

Every reader of a JSON or JSONL file the package did not just write opens it through
:func:`open_regular` (or :func:`read_text_bounded`): a regular file only (a FIFO put in a file's
place would block a reader forever; a device never ends) and at most a bounded number of bytes.

A small JSON object that several processes update (a shared spend total, a rate-limit window) is
read, changed and written back under one exclusive ``flock`` by :func:`locked_json_object`.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any, Iterator

from spatialscout_gym.core.errors import SpatialScoutError
from spatialscout_gym.core.run_files import GROUND_TRUTH_FILE, PREDICTIONS_FILE
from spatialscout_gym.core.scoring import GroundTruth
from spatialscout_gym.core.types import is_finite_vec3

__all__ = ["FileProblemError", "SceneFileError", "cache_root", "read_json", "load_ground_truth",
           "load_predictions", "find_scene_dirs", "write_json_atomic", "write_text_atomic", "open_regular",
           "read_text_bounded", "loads_finite", "locked_json_object", "SharedFileError", "NotRegularFileError", "FileTooLargeError", "MAX_JSON_BYTES", "MAX_TRACE_BYTES"]



class FileProblemError(SpatialScoutError, ValueError):
    """A file that cannot be used: ``"<path>: <problem>"``, one line. The base of each kind below,
    which callers catch by kind."""

    def __init__(self, path: str | os.PathLike, problem: str) -> None:
        self.path = Path(path)
        self.problem = problem
        super().__init__(f"{path}: {problem}")

    def __reduce__(self):
        # rebuilt from (path, problem) when pickled to a worker process or copied
        return (type(self), (str(self.path), self.problem))


class SceneFileError(FileProblemError):
    """A missing, unreadable or invalid scene file; the message starts with the file's path."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name} (use finite numbers)")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"number {text} is too large (not finite)")
    return value


def loads_finite(text: str) -> Any:
    """``json.loads`` that refuses ``NaN``, ``Infinity`` and numbers that overflow to infinity
    (``1e999``) with a ``ValueError``: no file the package writes holds one, and a reader that took
    one would fail later, when it writes a figure of it."""
    return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


MAX_JSON_BYTES = 64 << 20
"""Largest JSON file read, bytes (a result, ground truth or settings file is a few kB to a few MB)."""
MAX_TRACE_BYTES = 1 << 30
"""Largest JSONL trace read, bytes (a 100-call episode writes well under 10 MB)."""


class NotRegularFileError(OSError):
    """A path that is a FIFO, socket, device or directory where a file is read."""


class FileTooLargeError(OSError):
    """A file above the size a reader takes."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a regular file"


def open_regular(path: str | os.PathLike, limit: int = MAX_JSON_BYTES) -> io.BufferedReader:
    """``path`` opened for reading in binary mode when it is a regular file of at most ``limit``
    bytes. The open itself never blocks (``O_NONBLOCK``: a FIFO with no writer would wait
    forever); :class:`NotRegularFileError` (``IsADirectoryError`` for a directory) or
    :class:`FileTooLargeError` otherwise, both ``OSError`` with the reason as ``strerror``."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(21, "is a directory, expected a file", str(path))
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFileError(22, f"{_kind(st.st_mode)}, expected a regular file", str(path))
        if st.st_size > limit:
            raise FileTooLargeError(27, f"{st.st_size} bytes, more than the {limit} read", str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_text_bounded(path: str | os.PathLike, limit: int = MAX_JSON_BYTES) -> str:
    """The UTF-8 text of ``path`` through :func:`open_regular`; a file that grew past ``limit``
    since it was opened is refused too (:class:`FileTooLargeError`)."""
    with open_regular(path, limit) as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise FileTooLargeError(27, f"more than the {limit} bytes read", str(path))
    return data.decode("utf-8")


def read_json(path: str | os.PathLike) -> Any:
    """Parse a JSON file strictly; :class:`SceneFileError` for a missing file or bad JSON."""
    p = Path(path)
    try:
        text = read_text_bounded(p)
    except FileNotFoundError:
        raise SceneFileError(p, "file not found") from None
    except (NotRegularFileError, FileTooLargeError, IsADirectoryError) as exc:
        raise SceneFileError(p, f"{exc.strerror}; it is not read") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SceneFileError(p, f"cannot read file ({exc.__class__.__name__}: {exc})") from None
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float,
                          object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as exc:
        raise SceneFileError(p, f"malformed JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from None
    except ValueError as exc:
        raise SceneFileError(p, f"invalid JSON: {exc}") from None
    except RecursionError:
        raise SceneFileError(p, "invalid JSON: arrays or objects nested too deeply") from None


def load_ground_truth(path: str | os.PathLike) -> GroundTruth:
    """Read and validate a ``ground_truth.json`` file (or the one in scene directory ``path``)."""
    p = Path(path)
    if p.is_dir():
        p = p / GROUND_TRUTH_FILE
    try:
        return GroundTruth.from_dict(read_json(p))
    except SceneFileError:
        raise
    except ValueError as exc:
        raise SceneFileError(p, str(exc)) from None


def load_predictions(path: str | os.PathLike, gt: GroundTruth | None = None) -> dict[str, list[float]]:
    """Read ``predictions.json`` (or the one in scene directory ``path``).

    Each entry must be three finite numbers; with ``gt``, every id must be one of its targets.
    """
    p = Path(path)
    if p.is_dir():
        p = p / PREDICTIONS_FILE
    data = read_json(p)
    if not isinstance(data, dict) or "positions" not in data:
        raise SceneFileError(p, 'expected an object {"positions": {"<id>": [x, y, z], ...}}')
    positions = data["positions"]
    if not isinstance(positions, dict):
        raise SceneFileError(p, f'"positions" must be an object mapping ids to [x, y, z], got '
                                f"{type(positions).__name__}")
    for key, value in positions.items():
        if gt is not None and key not in gt.index:
            raise SceneFileError(p, f"unknown target id {key!r}: not a target of scene "
                                    f"{gt.scene_id!r} (see its ground_truth.json)")
        if not is_finite_vec3(value):
            raise SceneFileError(p, f"position of {key!r} must be three finite numbers [x, y, z] "
                                    f"(task frame, metres), got {value!r}")
    return {k: [float(x) for x in v] for k, v in positions.items()}


def find_scene_dirs(path: str | os.PathLike) -> list[Path]:
    """Scene directories at or under ``path``: ``path`` itself when it holds ``ground_truth.json``,
    else every directory below it that does, sorted.

    Hidden directories below ``path`` (a name starting with ``.``) are skipped: they are the
    temporary siblings a killed run leaves behind (``.<run>.XXXX.tmp``, see
    :func:`spatialscout_gym.eval.running.runner.write_run`), not finished runs."""
    p = Path(path)
    if not p.exists():
        raise SceneFileError(p, "no such file or directory")
    if p.is_file():
        if p.name in (GROUND_TRUTH_FILE, PREDICTIONS_FILE):
            return [p.parent]
        raise SceneFileError(p, f"expected a scene directory (holding {GROUND_TRUTH_FILE}) or a "
                                f"directory of them")
    if (p / GROUND_TRUTH_FILE).is_file():
        return [p]
    found = sorted(g.parent for g in p.rglob(GROUND_TRUTH_FILE)
                   if not any(part.startswith(".") for part in g.parent.relative_to(p).parts))
    if not found:
        raise SceneFileError(p, f"no {GROUND_TRUTH_FILE} in this directory or below it (hidden "
                                f"directories such as a killed run's .tmp ones are skipped)")
    return found


def cache_root() -> Path:
    """The folder where the package keeps what it derives once per machine (the texture library,
    the camera shader pack): ``$SPATIALSCOUT_CACHE_DIR``, default ``~/.cache/spatialscout_gym``."""
    root = os.environ.get("SPATIALSCOUT_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache",
                                                                     "spatialscout_gym")
    return Path(root)


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` atomically: a temporary file in the same directory, flushed and
    fsynced, then :func:`os.replace`. Readers see the old file or the new one, never a partial one.
    Parent directories are created."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return p


def write_json_atomic(path: str | os.PathLike, obj: Any, *, indent: int | None = 2) -> Path:
    """Write ``obj`` as JSON to ``path`` atomically (:func:`write_text_atomic`). Non-finite floats
    are refused (``ValueError``)."""
    return write_text_atomic(path, json.dumps(obj, indent=indent, allow_nan=False) + "\n")


class SharedFileError(FileProblemError):
    """A shared state file (:func:`locked_json_object`) that is a link, not a regular file, or
    does not hold a JSON object; the message starts with its path. Nothing was written to it."""


def _create_json_object(path: Path) -> None:
    """Make ``path`` hold ``{}`` unless something is there: written beside it and linked in, so
    that no process ever finds the file empty (an empty file is a write that did not finish)."""
    if os.path.lexists(path):
        return
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write("{}")
        try:
            os.link(tmp, path)
        except FileExistsError:   # another process made it first
            pass
    finally:
        os.unlink(tmp)


def _open_shared(path: Path) -> int:
    """A read-write descriptor of the regular file ``path``; never through a symbolic link (the
    link's target would be overwritten) and never blocking on a FIFO."""
    try:
        st = os.lstat(path)   # the type first: opening a FIFO to read waits for a writer
    except FileNotFoundError:
        raise SharedFileError(path, "was removed while it was being opened; run again") from None
    if stat.S_ISLNK(st.st_mode):
        raise SharedFileError(path, "is a symbolic link; it is not followed (its target would be overwritten)")
    if not stat.S_ISREG(st.st_mode):
        raise SharedFileError(path, f"is {_kind(st.st_mode)}, not a regular file; it is not read")
    try:   # O_NOFOLLOW and the second check: the path may have been swapped since
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise SharedFileError(path, f"cannot be opened ({exc.strerror}); it is not read") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise SharedFileError(path, "is not a regular file; it is not read")
    os.set_blocking(fd, True)
    return fd


@contextlib.contextmanager
def locked_json_object(path: str | os.PathLike, *, finite: bool = True,
                       limit: int = MAX_JSON_BYTES) -> Iterator[dict]:
    """The JSON object in ``path`` (created as ``{}`` if missing), held under an exclusive
    ``flock`` for the ``with`` block, and written back when the block changed it. Every process
    sharing the file sees each update whole: the lock, not an atomic rename, keeps readers out of a
    half-written file (:func:`read_spend` takes it shared).

    A file that cannot be taken is never reset: :class:`SharedFileError` when ``path`` is a
    symbolic link or not a regular file, when it is empty, larger than ``limit``, not UTF-8 or not
    JSON, or holds anything but an object, and (``finite``) when it holds ``NaN`` or ``Infinity``.
    The new text is written over the old before the file is cut to its length, so a write that
    did not finish leaves text that does not parse, never an empty file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _create_json_object(path)
    with os.fdopen(_open_shared(path), "r+b") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            data = fh.read(limit + 1)
            if len(data) > limit:
                raise SharedFileError(path, f"holds more than the {limit} bytes read; it is not read")
            try:
                text = data.decode("utf-8")
                state = (loads_finite(text) if finite else json.loads(text)) if text.strip() else None
            except UnicodeDecodeError:
                raise SharedFileError(path, "is not UTF-8 text") from None
            except json.JSONDecodeError as exc:
                raise SharedFileError(path, f"is not JSON ({exc.msg} at line {exc.lineno}, column "
                                            f"{exc.colno}): a write that did not finish, or an edit") from None
            except ValueError as exc:
                raise SharedFileError(path, f"holds a {exc}") from None
            except RecursionError:
                raise SharedFileError(path, "is not JSON (nested too deeply)") from None
            if state is None:
                raise SharedFileError(path, "is empty: a write that did not finish, or an edit")
            if not isinstance(state, dict):
                raise SharedFileError(path, f"holds a JSON {type(state).__name__}, not an object")
            yield state
            new = json.dumps(state, allow_nan=False)
            if new != text:
                fh.seek(0)
                fh.write(new.encode("utf-8"))
                fh.truncate()
                fh.flush()
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
