"""Lazy package exports (PEP 562): a name is imported from its module on first use."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping


def lazy_exports(package: str, names: Mapping[str, str], exported: list[str]
                 ) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``names`` maps an attribute to the module
    that defines it."""

    def __getattr__(name: str) -> object:
        if name in names:
            return getattr(importlib.import_module(names[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(exported)

    return __getattr__, __dir__
