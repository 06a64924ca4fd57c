"""Modules of bench/ that tests use, loaded from their files (bench/ is scripts, not a
package the library ships)."""

import importlib.util
import sys
from types import ModuleType

from helpers.paths import ROOT


def bench_module(name: str) -> ModuleType:
    """``bench/<name>.py`` imported (once per session)."""
    key = f"hf_real3d_bench_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, ROOT / "bench" / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[key] = mod  # before it runs: its dataclasses look their module up
        spec.loader.exec_module(mod)
    return sys.modules[key]
