"""Command-line options from a dataclass, parsed as ``transformers.HfArgumentParser`` does,
without importing transformers (which every ``hf-real3d`` command would otherwise pay for).

The field types the command line uses are supported with HfArgumentParser's exact rules:
``str`` / ``int`` / ``float``, ``X | None``, ``bool`` (``--flag``, ``--flag true|false``,
and ``--no_flag`` when the default is True), ``list[X]`` (one or more values); the
``help`` and ``aliases`` field metadata; ``--field_name`` or ``--field-name``; a field
without a default is required. Any other type raises ``TypeError`` naming the field, so
a new option either parses identically or fails loudly (tests/test_cli.py compares both
parsers on every command).

:func:`check_values` checks a mapping of values (a recipe's YAML file) against the same
dataclass fields, exactly: the one place that knows what a field's type accepts.
"""

from __future__ import annotations

import argparse
import collections.abc
import dataclasses
import difflib
import enum
import types
import typing
from typing import Any

__all__ = ["DataclassParser", "string_to_bool", "check_values", "accepts"]


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


def accepts(tp: Any, value: Any) -> bool:
    """Whether a YAML ``value`` has the dataclass field type ``tp`` exactly (no coercion:
    6.5 is not an int, [0.1] is not a float, "3" is not a number)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(accepts(a, value) for a in args)
    if tp is type(None):
        return value is None
    if origin is typing.Literal:
        return value in args
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if tp is str:
        return isinstance(value, str)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return isinstance(value, tp) or (isinstance(value, str | int | float)
                                         and value in {m.value for m in tp})
    if origin in (list, tuple, collections.abc.Sequence):
        return isinstance(value, list) and (not args or all(accepts(args[0], v) for v in value))
    if origin is dict or tp is dict:
        return isinstance(value, dict)
    return True  # a type this check does not know: left to the parser


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def check_values(cfg: dict[str, Any], classes: tuple, path: str = "config") -> None:
    """A mapping of option values (a YAML file's) for the fields of ``classes``: unknown
    keys are refused naming the nearest valid one, values of another type than the field's
    (checked exactly, :func:`accepts`) naming the field and the value."""
    hints: dict[str, Any] = {}
    for cls in classes:
        hints.update({f.name: typing.get_type_hints(cls)[f.name]
                      for f in dataclasses.fields(cls) if f.init})
    for key, value in cfg.items():
        if key not in hints:
            near = difflib.get_close_matches(str(key), list(hints), n=1)
            raise ValueError(f"{path}: unknown argument {key!r}"
                             + (f"; did you mean {near[0]!r}?" if near else ""))
        if not accepts(hints[key], value):
            raise TypeError(f"{path}: {key}: expected {_type_name(hints[key])} but got "
                            f"{value!r} ({type(value).__name__})")
