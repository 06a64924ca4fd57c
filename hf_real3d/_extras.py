"""The optional extras: which ``pip install 'hf-real3d[...]'`` provides which package, and the
one-line error that names it when a step needs a package that is not installed.

The base install (``pip install hf-real3d``) loads and scores the benchmarks and reads and writes
ScanNet-format scenes; torch, open3d (rendering) and the rest come with the extras below
(``setup.cfg`` lists their versions).
"""

from __future__ import annotations

import importlib.util

__all__ = ["EXTRAS", "MissingExtraError", "extra_for", "missing_extra_message", "require"]

# extra -> the importable top-level packages it brings (those the library imports)
EXTRAS: dict[str, tuple[str, ...]] = {
    "train": ("torch", "transformers", "trl", "peft", "accelerate", "tokenizers", "safetensors"),
    "scenes": ("open3d",),
    "llm": ("openai",),
    "app": ("gradio", "plotly", "playwright"),
    "scanqa": ("pycocoevalcap",),
    "docs": ("mkdocs", "mkdocstrings"),
    "lmms": ("lmms_eval",),
}
_PROVIDED_BY = {package: extra for extra, packages in EXTRAS.items() for package in packages}


class MissingExtraError(ImportError):
    """A package of an optional extra is not installed; the message names the extra."""


def extra_for(package: str) -> str | None:
    """The extra that installs ``package`` (a top-level or dotted module name), or None."""
    return _PROVIDED_BY.get(package.partition(".")[0])


def _install(extra: str) -> str:
    return f"pip install 'hf-real3d[{extra}]'"


def missing_extra_message(err: ImportError) -> str:
    """``err``'s message, with the extra to install when the missing module is one of an
    extra's packages (``No module named 'torch': pip install 'hf-real3d[train]'``)."""
    if isinstance(err, MissingExtraError):
        return str(err)
    name = getattr(err, "name", None) or ""
    extra = extra_for(name) if isinstance(err, ModuleNotFoundError) else None
    return f"{err}: {_install(extra)}" if extra else str(err)


def require(*packages: str, what: str) -> None:
    """Raise :class:`MissingExtraError` naming the extra(s) to install when one of
    ``packages`` is not installed; ``what`` says which step needs them.

    >>> require("json", what="reading JSON")  # present: nothing happens
    """
    missing = [p for p in packages if importlib.util.find_spec(p.partition(".")[0]) is None]
    if not missing:
        return
    extras = sorted({extra_for(p) for p in missing} - {None})
    how = "; ".join(_install(e) for e in extras) if extras else "pip install " + " ".join(missing)
    raise MissingExtraError(f"{what} needs {' and '.join(missing)}, which "
                            f"{'is' if len(missing) == 1 else 'are'} not installed: {how}",
                            name=missing[0])
