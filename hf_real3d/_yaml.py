"""YAML input files read strictly: a key set twice is an error, as is malformed YAML, each
naming the file and line (kept apart from ``_io`` so the evaluation path never imports
PyYAML)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from hf_real3d._io import FormatError

__all__ = ["read_yaml"]


class _UniqueKeyLoader(yaml.SafeLoader):
    """A safe YAML loader for which a key set twice in one mapping is an error."""

    def construct_mapping(self, node, deep=False):
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise FormatError(f"{self.name}: line {line}: key {key!r} is set twice (first "
                                  f"at line {seen[key]}); keep one")
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def read_yaml(path: str | os.PathLike) -> Any:
    """Read a YAML file (BOM allowed) with a key set twice, or malformed YAML, as a
    :class:`FormatError` naming the file and line."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    loader = _UniqueKeyLoader(path.read_text(encoding="utf-8-sig"))
    loader.name = str(path)
    try:
        return loader.get_single_data()
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        at = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        raise FormatError(f"{path}: malformed YAML: {at}"
                          f"{getattr(err, 'problem', None) or err}") from None
    finally:
        loader.dispose()
