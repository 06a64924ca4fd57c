"""The documentation site: `make docs` builds strictly (a broken link fails it), the API
reference and the layout table name every module, and the README's quick start shows only
commands the how-to pages run (tests/test_readme.py runs those)."""

import re
import subprocess
import sys
from pathlib import Path

import yaml
from helpers.docs import doc_pages
from helpers.paths import ROOT

MKDOCS = Path(sys.executable).parent / "mkdocs"
PKG = ROOT / "hf_real3d"


def _modules() -> set[str]:
    """Every module of the package but private ones, package __init__s and the lmms-eval
    hooks folder (not a package: lmms-eval loads its utils.py by path)."""
    out = set()
    for f in PKG.rglob("*.py"):
        rel = f.relative_to(ROOT).with_suffix("")
        if f.name == "__init__.py" or any(p.startswith("_") for p in rel.parts[1:]) or \
                "lmms_tasks" in rel.parts:
            continue
        out.add(".".join(rel.parts))
    return out


def _build(config: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(MKDOCS), "build", "--strict", "-f", str(config), "--site-dir",
                           str(tmp_path / "site")], capture_output=True, text=True, timeout=300)


def test_the_site_builds_strictly(tmp_path):
    p = _build(ROOT / "mkdocs.yml", tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    assert (tmp_path / "site/api/scoring/index.html").is_file()
    html = (tmp_path / "site/api/scoring/index.html").read_text()
    assert "circular_eval" in html and "vanilla_unshifted" in html  # from the docstrings


def test_a_broken_link_fails_the_build(tmp_path):
    docs = tmp_path / "docs"
    subprocess.run(["cp", "-r", str(ROOT / "docs"), str(docs)], check=True)
    (docs / "study.md").write_text((docs / "study.md").read_text() +
                                   "\nSee [a page that is not there](nowhere.md).\n")
    cfg = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    cfg["docs_dir"] = str(docs)
    cfg["plugins"][1]["mkdocstrings"]["handlers"]["python"]["paths"] = [str(ROOT)]
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(cfg))
    p = _build(tmp_path / "mkdocs.yml", tmp_path)
    assert p.returncode != 0 and "nowhere.md" in p.stderr, p.stderr[-2000:]


def test_every_page_is_in_the_nav_and_every_module_in_the_api_reference():
    pages = {p.relative_to(ROOT / "docs").as_posix() for p in doc_pages()}
    on_disk = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    assert pages == on_disk, on_disk ^ pages
    referenced = set()
    for page in (ROOT / "docs/api").glob("*.md"):
        referenced |= set(re.findall(r"^::: (\S+)$", page.read_text(), flags=re.M))
    missing = sorted(_modules() - referenced)
    assert not missing, f"modules without an API page entry: {missing}"


def test_the_layout_table_names_every_module():
    rows = [line for line in (ROOT / "docs/layout.md").read_text().splitlines()
            if line.startswith("| `")]
    named = set()
    for row in rows:
        folder, modules = (c.strip() for c in row.split("|")[1:3])
        folder = folder.strip("`")
        for m in re.findall(r"`([\w.]+)\.py`", modules):
            named.add(folder + m + ".py")
    want = {f.relative_to(ROOT).as_posix() for f in PKG.rglob("*.py")
            if f.name != "__init__.py"}
    named = {n for n in named if n.startswith("hf_real3d/")}
    assert not want - named, sorted(want - named)
    assert not named - want, sorted(named - want)  # no module listed that is not there


def test_readme_quick_start_commands_are_run_by_the_how_to_pages():
    def commands(text):
        out = []
        for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
            joined = re.sub(r"\\\n\s*", " ", block)
            out += [" ".join(line.split()) for line in joined.splitlines() if line.strip()]
        return out

    howto = {c for page in doc_pages("How-to") for c in commands(page.read_text())}
    quick = commands((ROOT / "README.md").read_text())
    quick = [c for c in quick if not c.startswith(("make ", "pip install "))]  # set-up
    assert quick and not [c for c in quick if c not in howto], \
        [c for c in quick if c not in howto]


def test_one_front_door():
    """docs/index.md is the README with its links into docs/ made relative: one front page,
    with the install line, the two commands and a Python quick start that a how-to page runs
    (test_readme runs it)."""
    readme = (ROOT / "README.md").read_text()
    assert (ROOT / "docs/index.md").read_text() == readme.replace("](docs/", "](").replace(
        "`make docs` builds the site into `site/` (strictly: a broken link or a missing "
        "reference\nfails it). Its pages, readable here too, in the order a user meets them:",
        "`make docs` builds this site into `site/` (strictly: a broken link or a missing "
        "reference\nfails it). Its pages, in the order a user meets them:")
    assert "pip install hf-real3d" in readme and "make demo" in readme and "make test" in readme
    quick = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
    assert quick and all(call in quick[0] for call in ("load_dataset(", "evaluate.load(",
                                                        "hf_real3d.recipes", ".main("))
    howto = "".join(p.read_text() for p in doc_pages("How-to"))
    for block in quick:
        assert f"```python\n{block}```" in howto  # the how-to test runs it
        assert len(block.strip().splitlines()) <= 15
