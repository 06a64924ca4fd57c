"""Atomic file and folder writes: bad input never leaves a half-written output behind."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["atomic_path", "atomic_dir", "write_json", "read_json", "FormatError"]


class FormatError(ValueError):
    """An input file or record that does not follow its documented format."""


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary sibling path; rename it onto ``path`` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, path)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary sibling folder; it replaces ``path`` only if the block succeeds.

    An existing ``path`` is moved aside first and removed once the new folder is in place,
    so a failure at any point leaves either the old folder or nothing, never a mix.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        yield tmp
        old = None
        if path.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".old", dir=path.parent))
            os.replace(path, old / "x")
        os.replace(tmp, path)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def write_json(path: str | os.PathLike, obj: Any, *, indent: int | None = None) -> None:
    """Write JSON atomically (``allow_nan=False``: NaN is not JSON)."""
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=indent, allow_nan=False)


def read_json(path: str | os.PathLike) -> Any:
    """Read JSON, turning a parse error into a :class:`FormatError` naming file and line."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    with open(path, encoding="utf-8") as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as err:
            raise FormatError(
                f"{path}: malformed JSON at line {err.lineno}, column {err.colno}: {err.msg}"
            ) from None
