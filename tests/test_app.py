"""The explorer (`hf-real3d explore`): its data layer, its errors, and the app itself in a real
browser (Debian's chromium driven by Playwright)."""

import io
import json
import os
import shutil
import socket
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from hf_real3d import app as A
from hf_real3d.cli import main
from hf_real3d.hub import load_local
from hf_real3d.real3dqa import build_real3dqa
from hf_real3d.real3dqa.evaluate import evaluate_files
from hf_real3d.sqa3d import read_split
from hf_real3d.synth import SynthConfig, build_benchmark

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
BROWSER_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync"]


def _jsonl(path, rows):
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return str(path)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """A built Real-3DQA folder with scenes, two models' answers on every viewpoint (one
    with a planted right-to-wrong flip), two results folders and a 3DSRBench folder."""
    root = tmp_path_factory.mktemp("explore")
    synth = root / "synth"
    build_benchmark(synth, SynthConfig(seed=11, scenes={"train": 0, "val": 0, "test": 2},
                                       questions_per_scene={"test": 40}),
                    workers=1, progress=False)
    recs = read_split(synth / "sqa3d", "test")
    full = _jsonl(root / "full.jsonl", [{"question_id": r.question_id,
                                         "prediction": r.answers[0]} for r in recs])
    blind = _jsonl(root / "blind.jsonl", [
        {"question_id": r.question_id,
         "prediction": r.answers[0] if r.extra["synth"]["guessable"] else "zzz"}
        for r in recs])
    r3 = root / "r3"
    build_real3dqa(synth / "sqa3d", synth / "scans", r3, pairs=[("oracle", full, blind)],
                   progress=False)
    rot = load_local(r3, "rotations").to_pandas()
    base = load_local(r3, "sqa3d").to_pandas()
    flip_qid = int(rot.question_id.iloc[0])
    rows = [(int(q), 0, list(a)) for q, a in zip(base.question_id, base.answers)
            if q not in set(rot.question_id)]
    rows += [(int(q), int(d), list(a)) for q, d, a in
             zip(rot.question_id, rot.rotation_deg, rot.answers)]
    oracle = _jsonl(root / "oracle.jsonl", [
        {"question_id": q, "rotation_deg": d,
         "prediction": "zzz" if (q, d) == (flip_qid, 90) else a[0]} for q, d, a in rows])
    yes = _jsonl(root / "yes.jsonl", [{"question_id": q, "rotation_deg": d, "prediction": "yes"}
                                      for q, d, _ in rows])
    evaluate_files(r3, [f"oracle={oracle}", f"yes={yes}"], root / "res_a")
    evaluate_files(r3, [f"yes={yes}"], root / "res_b")
    from helpers.data import three_question_srbench

    sr = three_question_srbench(root / "sr")
    sr_rows = load_local(sr, "synthetic_common").remove_columns(["image"])
    sr_preds = _jsonl(root / "sr_a.jsonl", [{"qid": q, "prediction": "A"}
                                            for q in sr_rows["qid"]])
    return {"root": root, "r3": r3, "oracle": oracle, "yes": yes, "flip_qid": flip_qid,
            "rot": rot, "sr": sr, "sr_preds": sr_preds,
            "results": [str(root / "res_a"), str(root / "res_b")]}


def test_questions_viewpoints_and_flips(folders):
    d = A.ExplorerData.load(str(folders["r3"]), [f"oracle={folders['oracle']}",
                                                 f"yes={folders['yes']}"])
    qd = d.questions
    kept = load_local(folders["r3"], "real3dqa")
    out = load_local(folders["r3"], "filtered_out")
    assert (qd.table.subset == "de-biased").sum() == kept.num_rows
    assert (qd.table.subset == "filtered out").sum() == out.num_rows
    assert set(qd.table.reason[qd.table.subset == "filtered out"]) == {"pair:oracle"}
    q = folders["flip_qid"]
    group = folders["rot"][folders["rot"].question_id == q].sort_values("rotation_deg")
    assert [int(v["rotation_deg"]) for v in qd.viewpoints[q]] == [0, 90, 180, 270]
    page = A.question_html(qd, q, d.models)
    for deg, answers in zip(group.rotation_deg, group.answers):
        assert f"<td class='vp-answer' data-deg='{deg}'><b>{answers[0]}</b></td>" in page
    assert "oracle: 1 right-to-wrong flip(s)" in page
    assert A.question_html(qd, q, d.models[:1]).count("class='flip'") == 1
    # the filters: a type and a subset narrow the list to exactly those questions
    t = qd.table
    qtype = t.question_type.iloc[0]
    got = A.filtered_ids(qd, qtype, "all", "de-biased")
    assert got == t.question_id[(t.question_type == qtype) &
                                (t.subset == "de-biased")].tolist()
    # the 3D view and the top-down picture, with the answer objects of the viewpoint
    fig = A.scene_figure(qd, q, 90)
    assert fig.data[0].type == "scatter3d" and 0 < len(fig.data[0].x) <= A.MAX_POINTS
    assert "agent at 90 deg" in [t.name for t in fig.data]
    assert A.topdown_image(qd, q).size[0] > 200
    # the P_k curve of each model, with the independence expectation
    pk = A.pk_figure(d.models)
    names = [t.name for t in pk.data]
    assert any(n.startswith("oracle (VRS") for n in names) and "yes: independent" in names


def test_imported_release_shows_text_with_a_note(real_dir, tmp_path):
    from hf_real3d.real3dqa.build import import_release

    import_release(real_dir / "real3dqa", tmp_path / "imp")
    qd = A.load_questions(tmp_path / "imp")
    assert (qd.table.subset == "de-biased").sum() == 1485
    assert not qd.has_scenes and "no `scenes` config" in qd.note
    assert A.scene_figure(qd, int(qd.table.question_id[0])) is None
    groups = [q for q, v in qd.viewpoints.items() if len(v) == 4]
    assert len(groups) >= 740
    assert A.question_html(qd, groups[0]).count("class='vp-answer'") == 4


def test_leaderboard_tables_and_exports(folders):
    lb = A.load_leaderboard(folders["results"])
    assert lb.real3dqa.model.tolist() == ["oracle", "yes", "yes"]
    assert lb.real3dqa.run.tolist() == ["res_a", "res_a", "res_b"]
    metrics = json.loads((folders["root"] / "res_a" / "metrics.json").read_text())
    assert lb.real3dqa.VRS.iloc[0] == pytest.approx(metrics[0]["rotation"]["vrs"], abs=0.05)
    assert all(r.endswith("report.md") for r in lb.reports) and len(lb.reports) == 2
    md = A.leaderboard_markdown(lb.real3dqa)
    assert md.splitlines()[0].startswith("| run | model | EM | EM_R |") and "report" not in md
    path = A.export_csv(lb.real3dqa, "lb")
    assert Path(path).resolve().is_relative_to(Path(tempfile.gettempdir()).resolve())
    assert Path(path).read_text().count("\n") == 4
    table = A.leaderboard_html(lb.real3dqa, "real3dqa")
    assert table.count("<tr>") == 4 and "gradio_api/file=" in table


def test_srbench_item_shows_every_order_and_answers(folders):
    sr = A.load_srbench(folders["sr"], [f"always_a={folders['sr_preds']}"])
    items = A.srbench_items(sr, "synthetic_common")
    image, mirror, page = A.srbench_item(sr, "synthetic_common", items[0])
    assert image is not None and mirror is not None
    assert np.asarray(mirror).tolist() == np.asarray(image)[:, ::-1].tolist()
    m = sr.meta["synthetic_common"]
    group = m[m.flip_group == m[m.qid == items[0]].flip_group.iloc[0]]
    assert page.count("<tr><td>") == len(group)
    for r in group.itertuples():
        assert f"<td class='sr-answer'><b>{r.answer}</b></td>" in page
    assert page.count("class='sr-model'") == len(group)


def test_bad_folders_are_one_line(folders, tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    cases = [(["--dataset", str(tmp_path / "empty")], "cannot read as the folder to explore"),
             (["--dataset", str(tmp_path / "nope")], "no such folder"),
             (["--dataset", str(folders["sr"])], "none of real3dqa / rotations / sqa3d"),
             (["--results", str(folders["r3"])], "not a results folder (no metrics.json)"),
             (["--srbench", str(folders["r3"])], "no real / synthetic_common"),
             (["--predictions", f"x={folders['yes']}"], "--predictions needs --dataset"),
             ([], "nothing to explore")]
    for args, msg in cases:
        assert main(["explore", *args]) == 2
        err = capsys.readouterr().err
        assert msg in err and err.count("\n") == 1, (args, err)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def served(folders, tmp_path_factory):
    """The app served from a process-local thread, its working folder an empty one."""
    cwd = tmp_path_factory.mktemp("explore_cwd")
    old = os.getcwd()
    os.chdir(cwd)
    app = A.build_app(str(folders["r3"]), [f"oracle={folders['oracle']}",
                                           f"yes={folders['yes']}"],
                      folders["results"], str(folders["sr"]),
                      [f"always_a={folders['sr_preds']}"])
    port = _free_port()
    A.launch(app, port=port, block=False, quiet=True)
    try:
        yield {"url": f"http://127.0.0.1:{port}/", "cwd": cwd, "app": app}
    finally:
        app.close()
        os.chdir(old)


@pytest.fixture(scope="module")
def page(served):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        pg = browser.new_page(viewport={"width": 1300, "height": 1000})
        pg.goto(served["url"])
        pg.wait_for_selector("#question table.viewpoints", timeout=60000)
        yield pg
        browser.close()


def select_option(pg, elem_id: str, value: str) -> None:
    """Pick ``value`` in a Gradio dropdown by typing it and clicking the option."""
    box = pg.locator(f"#{elem_id} input")
    box.click()
    box.press("Control+a")
    box.press_sequentially(value)
    pg.get_by_role("option", name=value, exact=True).click()


@pytest.mark.slow
def test_browser_question_viewpoints_and_3d_view(folders, served, page):
    q = folders["flip_qid"]
    select_option(page, "f-qid", str(q))
    page.wait_for_function(f"document.querySelector('#question').innerText.includes('{q}')",
                           timeout=20000)
    group = folders["rot"][folders["rot"].question_id == q].sort_values("rotation_deg")
    answers = page.locator("#question td.vp-answer").all_inner_texts()
    assert answers == [a[0] for a in group.answers]
    assert "oracle: 1 right-to-wrong flip(s)" in page.locator("#question .flips").inner_text()
    # the 3D view draws: its canvas is not blank
    from PIL import Image

    canvas = page.locator("#scene3d canvas").first
    canvas.wait_for(timeout=20000)
    page.wait_for_timeout(500)
    shot = np.asarray(Image.open(io.BytesIO(canvas.screenshot())).convert("RGB"))
    not_white = (shot.min(axis=2) < 200).mean()
    assert not_white > 0.01, f"3D canvas is blank ({not_white:.4f} of pixels drawn)"
    assert len(np.unique(shot.reshape(-1, 3), axis=0)) > 20
    # the page as the README shows it: written into docs/ only when asked
    # (HF_REAL3D_WRITE_DOCS=1), so that a test run leaves the checkout as it was
    page.evaluate("window.scrollTo(0, 0)")
    page.wait_for_timeout(200)
    shot_path = ROOT / "docs" / "explore.png" if os.environ.get("HF_REAL3D_WRITE_DOCS") == "1" \
        else Path(tempfile.mkdtemp(prefix="hf_real3d_shot_")) / "explore.png"
    page.screenshot(path=str(shot_path), full_page=False)
    assert shot_path.stat().st_size > 10000


@pytest.mark.slow
def test_browser_leaderboard_sorts_and_links(folders, served, page):
    page.get_by_role("tab", name="Leaderboard").click()
    table = page.locator("#lb-real3dqa-table")
    table.wait_for(timeout=20000)

    def column(i):
        return table.locator(f"tbody tr td:nth-child({i})").all_inner_texts()

    head = table.locator("thead th").all_inner_texts()
    vrs = head.index("VRS") + 1
    table.locator("th", has_text="VRS").first.click()
    values = [float(v) for v in column(vrs)]
    assert values == sorted(values)
    table.locator("th", has_text="VRS").first.click()
    values = [float(v) for v in column(vrs)]
    assert values == sorted(values, reverse=True) and values[0] > values[-1]
    assert column(2)[0] == "oracle"
    href = table.locator("a", has_text="report").first.get_attribute("href")
    body = page.request.get(served["url"].rstrip("/") + href)
    assert body.status == 200 and "|" in body.text()
    page.get_by_role("tab", name="Questions").click()


def test_server_refuses_other_paths(folders, served):
    def status(path: str) -> int:
        try:
            with urllib.request.urlopen(served["url"] + "gradio_api/file=" + path) as r:
                return r.status
        except urllib.error.HTTPError as err:
            return err.code

    assert status(str(Path(folders["results"][0]) / "report.md")) == 200
    for path in ("/etc/passwd", str(Path(folders["results"][0]) / "metrics.json"),
                 str(folders["r3"] / "README.md"), folders["oracle"],
                 str(ROOT / "setup.cfg")):
        assert status(path) in (403, 404), path
    # served on the loopback address only
    assert served["app"].server_name == "127.0.0.1"
    # nothing written in the working folder (Gradio writes its cache under the system temp)
    assert list(Path(served["cwd"]).iterdir()) == []


def test_synthetic_folder_marks_the_asked_objects(folders):
    """A folder of `hf-real3d synth` (questions with their semantics, no filtering): every
    test question, and the 3D view marks the objects a yes/no question asks about."""
    qd = A.load_questions(folders["root"] / "synth")
    recs = read_split(folders["root"] / "synth" / "sqa3d", "test")
    assert len(qd.table) == len(recs) and qd.has_scenes
    rec = next(r for r in recs if r.answers[0] in ("yes", "no") and r.extra["synth"]["objects"])
    fig = A.scene_figure(qd, rec.question_id, 0)
    assert any(t.name.startswith("answer:") and len(t.x) > 0 for t in fig.data)
