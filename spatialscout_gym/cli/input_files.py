"""Small input files the user names (``--models``, ``--price-table``, a preset's ``price_table``),
opened so that a FIFO, a device (``/dev/zero``) or a directory is refused in one line instead of
blocking or reading forever, and a regular file past a stated size is refused before it is read."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from spatialscout_gym.cli.errors import CliError

__all__ = ["SMALL_FILE_LIMIT", "check_small_file", "read_small_file", "read_text"]

SMALL_FILE_LIMIT = 1 << 20
"""Bytes a presets file or a price table may hold (1 MiB: either is a few hundred bytes)."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _open_checked(path: Path, flag: str, limit: int) -> int:
    """A descriptor of ``path`` when it is a regular file of at most ``limit`` bytes, else a
    one-line :class:`CliError`. ``O_NONBLOCK`` keeps the open of a FIFO with no writer from
    blocking; ``fstat`` of the open descriptor decides (no window between the check and the read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise CliError(f"{flag} {path}: cannot read it ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise CliError(f"{flag} {path}: {_kind(st.st_mode)}, not a regular file")
        if st.st_size > limit:
            raise CliError(f"{flag} {path}: {st.st_size} bytes, more than the {limit} this file may hold")
    except BaseException:
        os.close(fd)
        raise
    return fd


def check_small_file(path: Path, flag: str, limit: int = SMALL_FILE_LIMIT, *, utf8: bool = False) -> None:
    """Refuse ``path`` in one line unless it is a regular file of at most ``limit`` bytes (and,
    with ``utf8``, UTF-8 text), so that whatever reads it next neither blocks nor fails raw."""
    if not utf8:
        os.close(_open_checked(path, flag, limit))
        return
    read_text(path, flag, limit)


def read_text(path: Path, flag: str, limit: int = SMALL_FILE_LIMIT) -> str:
    """:func:`read_small_file` decoded as UTF-8 (one-line :class:`CliError` naming the first
    bad byte and its line otherwise)."""
    raw = read_small_file(path, flag, limit)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise CliError(f"{flag} {path}: not UTF-8 text (byte {exc.start}, line {line})") from None


def read_small_file(path: Path, flag: str, limit: int = SMALL_FILE_LIMIT) -> bytes:
    """The bytes of ``path``, a regular file of at most ``limit`` bytes (one-line :class:`CliError`
    otherwise; a file that grows past the limit while read is refused too)."""
    fd = _open_checked(path, flag, limit)
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise CliError(f"{flag} {path}: more than the {limit} bytes this file may hold")
    return data
