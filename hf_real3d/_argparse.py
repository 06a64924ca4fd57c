"""Command-line options from a dataclass, parsed as ``transformers.HfArgumentParser`` does,
without importing transformers (which every ``hf-real3d`` command would otherwise pay for).

The field types the command line uses are supported with HfArgumentParser's exact rules:
``str`` / ``int`` / ``float``, ``X | None``, ``bool`` (``--flag``, ``--flag true|false``,
and ``--no_flag`` when the default is True), ``list[X]`` (one or more values); the
``help`` and ``aliases`` field metadata; ``--field_name`` or ``--field-name``; a field
without a default is required. Any other type raises ``TypeError`` naming the field, so
a new option either parses identically or fails loudly (tests/test_cli.py compares both
parsers on every command). The recipes parse with trl's ``TrlParser``
(:mod:`hf_real3d.training.args`).
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from typing import Any

__all__ = ["DataclassParser", "string_to_bool"]


def string_to_bool(v: Any) -> bool:
    """``yes/true/t/y/1`` -> True, ``no/false/f/n/0`` -> False (HfArgumentParser's rule)."""
    if isinstance(v, bool):
        return v
    if v.lower() in ("yes", "true", "t", "y", "1"):
        return True
    if v.lower() in ("no", "false", "f", "n", "0"):
        return False
    raise argparse.ArgumentTypeError(
        f"Truthy value expected: got {v} but expected one of yes/no, true/false, t/f, y/n, 1/0 "
        "(case insensitive).")


def _optional_inner(tp: Any) -> Any:
    """``X | None`` -> X; other types unchanged."""
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return tp


class DataclassParser(argparse.ArgumentParser):
    """An ``argparse.ArgumentParser`` whose options are one dataclass's fields."""

    def __init__(self, dataclass_type: type, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", argparse.ArgumentDefaultsHelpFormatter)
        super().__init__(**kwargs)
        self.dataclass_type = dataclass_type
        hints = typing.get_type_hints(dataclass_type)
        for f in dataclasses.fields(dataclass_type):
            if f.init:
                self._add_field(f, hints[f.name])

    def _add_field(self, f: dataclasses.Field, tp: Any) -> None:
        names = [f"--{f.name}"] + ([f"--{f.name.replace('_', '-')}"] if "_" in f.name else [])
        kwargs = dict(f.metadata)
        aliases = kwargs.pop("aliases", [])
        names += [aliases] if isinstance(aliases, str) else list(aliases)
        has_default = f.default is not dataclasses.MISSING
        has_factory = f.default_factory is not dataclasses.MISSING
        inner = _optional_inner(tp)
        origin = typing.get_origin(inner)
        bool_kwargs = dict(kwargs)
        if inner is bool:
            kwargs["type"] = string_to_bool
            if tp is bool or (f.default is not None and has_default):
                kwargs.update(default=f.default if has_default else False, nargs="?", const=True)
        elif origin is list and len(typing.get_args(inner)) == 1:
            kwargs.update(type=typing.get_args(inner)[0], nargs="+")
            if has_factory:
                kwargs["default"] = f.default_factory()
            elif not has_default:
                kwargs["required"] = True
        elif inner in (str, int, float):
            kwargs["type"] = inner
            if has_default:
                kwargs["default"] = f.default
            elif has_factory:
                kwargs["default"] = f.default_factory()
            else:
                kwargs["required"] = True
        else:
            raise TypeError(f"{self.dataclass_type.__name__}.{f.name}: option type {tp!r} is not "
                            "supported by hf_real3d's option parser; use str, int, float, bool, "
                            "X | None or list[X]")
        self.add_argument(*names, **kwargs)
        if f.default is True and inner is bool:
            bool_kwargs["default"] = False
            self.add_argument(f"--no_{f.name}", f"--no-{f.name.replace('_', '-')}",
                              action="store_false", dest=f.name, **bool_kwargs)

    def parse_into_dataclass(self, args: list[str]) -> Any:
        """The options object; unknown arguments raise ``ValueError`` naming them."""
        namespace, rest = self.parse_known_args(args=args)
        if rest:
            raise ValueError(f"Some specified arguments are not used by the parser: {rest}")
        return self.dataclass_type(**vars(namespace))
