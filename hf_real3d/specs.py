"""The command line's prediction inputs: ``NAME=FILE[,FILE...]``, one model and its files.

Every command that reads predictions takes them in this form; the readers
(:mod:`hf_real3d.real3dqa.predictions`, :mod:`hf_real3d.srbench.predictions`) accept a spec
so that a user's ``--predictions`` value reaches them unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

__all__ = ["parse_prediction_spec", "check_unique_names", "named_files", "prediction_pairs"]


def parse_prediction_spec(spec: str) -> tuple[str, list[str]]:
    """``NAME=FILE[,FILE...]`` (or ``FILE[,FILE...]``) -> (name or "", [files])."""
    name, sep, files = spec.partition("=")
    if not sep:
        name, files = "", spec
    paths = [f for f in files.split(",") if f]
    if not paths:
        raise ValueError(f"prediction input {spec!r} names no file; write NAME=FILE[,FILE...]")
    return name, paths


def check_unique_names(specs: Sequence[str], what: str = "--predictions") -> list[str]:
    """The model names of ``[NAME=]FILE[,FILE...]`` specs (default: the first file's
    stem); a name given twice is an error naming both entries."""
    seen: dict[str, str] = {}
    names = []
    for spec in specs:
        name, files = parse_prediction_spec(spec)
        name = name or Path(files[0]).stem
        if name in seen:
            raise ValueError(f"{what}: model name {name!r} is given twice ({seen[name]!r} and "
                             f"{spec!r}); give each model its own NAME=")
        seen[name] = spec
        names.append(name)
    return names


def named_files(specs: list[str]) -> list[tuple[str, str]]:
    """``["NAME=FILE", ...]`` -> ``[(NAME, FILE), ...]``, one file per model."""
    out = []
    for spec in specs:
        name, files = parse_prediction_spec(spec)
        if not name or len(files) != 1:
            raise ValueError(f"prediction input {spec!r}: expected NAME=FILE (one file)")
        out.append((name, files[0]))
    names = [n for n, _ in out]
    if len(set(names)) != len(names):
        raise ValueError(f"prediction inputs name a model twice: {sorted(names)}")
    return out


def prediction_pairs(full: list[str], blind: list[str]) -> list[tuple[str, str, str]]:
    """(NAME, full file, blind file) from ``--full NAME=FILE`` and ``--blind NAME=FILE``."""
    f, b = dict(named_files(full)), dict(named_files(blind))
    if set(f) != set(b):
        raise ValueError(f"every `full` NAME=FILE needs a `blind` NAME=FILE of the same NAME; "
                         f"full: {sorted(f)}, blind: {sorted(b)}")
    return [(name, f[name], b[name]) for name in f]
