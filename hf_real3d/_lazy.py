"""Lazy package exports (PEP 562): a name is imported from its module on first use; a
moved module's old name imports the new one."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
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


class _Moved(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``package.OLD`` for each old name in ``table`` and gives the module now at
    ``table[OLD]``, the same object, with a DeprecationWarning."""

    def __init__(self, package: str, table: Mapping[str, str]):
        self.table = {f"{package}.{old}": new for old, new in table.items()}

    def find_spec(self, fullname, path=None, target=None):
        if fullname in self.table:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        new = self.table[spec.name]
        warnings.warn(f"{spec.name} moved to {new}; the old name goes in the next release",
                      DeprecationWarning, stacklevel=2)
        return importlib.import_module(new)

    def exec_module(self, module):  # the module ran when it was first imported
        pass


def moved_modules(package: str, table: Mapping[str, str]) -> None:
    """Let ``import package.OLD`` (``table``: old submodule name -> new module) import the new
    module, with a DeprecationWarning."""
    sys.meta_path.append(_Moved(package, table))
