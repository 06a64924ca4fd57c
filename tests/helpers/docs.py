"""The documentation as tests read it: its pages in the site's order, and all of it."""

from pathlib import Path

from helpers.paths import ROOT


def _nav_pages(nav) -> list[str]:
    out = []
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        out += _nav_pages(value) if isinstance(value, list) else [value]
    return out


def doc_pages(section: str | None = None) -> list[Path]:
    """The documentation's pages in the site's order (mkdocs.yml's nav); ``section``: only
    that top-level section's (e.g. "How-to")."""
    import yaml

    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
    if section is not None:
        nav = next(e[section] for e in nav if isinstance(e, dict) and section in e)
    return [ROOT / "docs" / p for p in _nav_pages(nav)]


def documentation() -> str:
    """The README and every documentation page, in the site's order: where a test looks for
    what the documentation says."""
    return "\n".join(p.read_text() for p in [ROOT / "README.md", *doc_pages()])
