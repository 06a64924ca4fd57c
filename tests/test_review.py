"""The rotation review (hf_real3d.review, `explore --review`, `review-stats`,
`export-rotations`): the queue, decisions that survive a killed writer, refused files, the
agreement figures against a hand computation, the export rule, the round trip through
import-real3dqa, and the Review tab driven by two annotators in Debian's chromium."""

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hf_real3d._io import FormatError
from hf_real3d.cli import main
from hf_real3d.hub import ConfigData, add_config, load_local
from hf_real3d.review import ReviewEntry, ReviewFolder, export_rotations, review_stats

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
BROWSER_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--disable-background-networking", "--disable-component-update"]


@pytest.fixture(scope="module")
def flagged_folder(tmp_path_factory):
    """A built Real-3DQA folder (one synthetic room, rotations from geometry) whose
    rotations config has half its items mirrored: a review queue with flags."""
    from conftest import build_synthetic_real3dqa

    from hf_real3d.real3dqa.corrupt import corrupt

    folder = build_synthetic_real3dqa(tmp_path_factory.mktemp("review"), seed=5, test_scenes=1,
                                      questions=24)
    rot = load_local(folder, "rotations")
    rows, changed = corrupt(rot.to_list(), "mirror", share=0.5, seed=0)
    assert changed
    add_config(folder, ConfigData("rotations", {"test": rows}, rot.features,
                                  "each question from 4 viewpoints, half mirrored"))
    return folder


def test_queue_puts_flagged_groups_first_and_repeats_some_items(flagged_folder, tmp_path):
    rf = ReviewFolder(tmp_path / "rv", flagged_folder, repeat_share=0.25, repeat_gap=3)
    n = len(rf.order)
    q = rf.queue("ann1")
    assert [(e.question_id, e.rotation_deg) for e in q if not e.repeat] == rf.order
    repeats = [i for i, e in enumerate(q) if e.repeat]
    assert len(repeats) == round(0.25 * n)
    for i in repeats:  # shown again at most repeat_gap items later, after its first showing
        first = q.index(ReviewEntry(q[i].question_id, q[i].rotation_deg))
        assert 0 < i - first <= 3 + len(repeats)
    flagged = [bool(rf.rules[k]) for k in rf.order]
    assert any(flagged[:3]) and not all(flagged)
    groups = [q for q, _ in rf.order]
    first_clean = next(i for i, k in enumerate(rf.order) if not any(
        rf.rules[(groups[i], d)] for d in (90, 180, 270)))
    assert all(any(rf.rules[(g, d)] for d in (90, 180, 270)) for g in groups[:first_clean])
    assert rf.queue("ann1") == q  # the same every time (seed and name)
    assert json.loads((tmp_path / "rv/review.json").read_text())["repeat_gap"] == 3


def test_decisions_append_resume_and_need_what_they_need(flagged_folder, tmp_path):
    rf = ReviewFolder(tmp_path / "rv", flagged_folder)
    e, done, total = rf.next_entry("ann1")
    assert done == 0 and total == len(rf.queue("ann1"))
    rf.record("ann1", e, "accept")
    with pytest.raises(ValueError, match="needs a reason"):
        rf.record("ann1", rf.next_entry("ann1")[0], "discard")
    e2 = rf.next_entry("ann1")[0]
    with pytest.raises(ValueError, match="must change the situation or the answers"):
        rf.record("ann1", e2, "correct", "typo")
    row = rf.rows[(e2.question_id, e2.rotation_deg)]
    rf.record("ann1", e2, "correct", "wrong answer", answers=["zzz "])
    lines = (tmp_path / "rv/ann1.jsonl").read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[1])["answers"] == ["zzz"]
    assert json.loads(lines[1])["situation"] == row["situation"]
    # a restart (a new process would do the same) resumes at the next item
    again = ReviewFolder(tmp_path / "rv")
    assert again.next_entry("ann1")[1] == 2
    with pytest.raises(ValueError, match="annotator name"):
        rf.record("../x", e, "accept")


def test_a_killed_writer_loses_no_decision(flagged_folder, tmp_path):
    rf = ReviewFolder(tmp_path / "rv", flagged_folder)
    script = textwrap.dedent(f"""
        from hf_real3d.review import ReviewFolder
        rf = ReviewFolder({str(tmp_path / 'rv')!r})
        while True:
            e, done, total = rf.next_entry("ann1")
            if e is None:
                break
            rf.record("ann1", e, "accept")
            print(e.question_id, e.rotation_deg, int(e.repeat), flush=True)
    """)
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    said = []
    for line in p.stdout:
        said.append(tuple(int(x) for x in line.split()))
        if len(said) == 6:
            os.kill(p.pid, signal.SIGKILL)
            break
    p.wait(30)
    got = {(d["question_id"], d["rotation_deg"], int(d["repeat"]))
           for d in rf.decisions("ann1")}
    assert len(said) == 6 and set(said) <= got


def test_bad_review_files_are_named_and_nothing_is_overwritten(flagged_folder, tmp_path,
                                                               real_dir):
    rf = ReviewFolder(tmp_path / "rv", flagged_folder)
    e = rf.next_entry("ann1")[0]
    rf.record("ann1", e, "accept")
    path = tmp_path / "rv/ann1.jsonl"
    cut = path.read_bytes() + b'{"annotator": "ann1", "question_id": 300000002, "rotat'
    path.write_bytes(cut)
    with pytest.raises(FormatError, match=r"ann1\.jsonl: line 2 \(question_id 300000002\) was "
                                          "cut mid-write"):
        rf.decisions("ann1")
    with pytest.raises(FormatError, match="cut mid-write"):
        rf.record("ann1", ReviewEntry(*rf.order[1]), "accept")
    assert path.read_bytes() == cut  # nothing appended to the cut line
    path.write_bytes(cut[:cut.rindex(b"\n") + 1]
                     + b'{"question_id": 999, "rotation_deg": 90, "decision": "accept"}\n')
    with pytest.raises(FormatError, match=r"line 2: question_id 999 at 90 degrees is not a "
                                          "rotated item"):
        review_stats(tmp_path / "rv")
    # a review folder of another rotation set
    with pytest.raises(FormatError, match="was written for the rotation set"):
        ReviewFolder(tmp_path / "rv", real_dir / "real3dqa")
    with pytest.raises(ValueError, match="repeat_share 0.1"):
        ReviewFolder(tmp_path / "rv", flagged_folder, repeat_share=0.5)
    (tmp_path / "other").mkdir()
    (tmp_path / "other/notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not a review folder"):
        ReviewFolder(tmp_path / "other", flagged_folder)
    assert (tmp_path / "other/notes.txt").read_text() == "mine"
    p = subprocess.run([sys.executable, "-m", "hf_real3d.cli", "review-stats",
                        str(tmp_path / "rv")], capture_output=True, text=True)
    assert p.returncode == 2 and "ann1.jsonl: line 2" in p.stderr and "Traceback" not in p.stderr


def _kappa_by_hand(a, b):
    labels = sorted(set(a) | set(b))
    n = len(a)
    po = sum(x == y for x, y in zip(a, b)) / n
    pe = sum((a.count(c) / n) * (b.count(c) / n) for c in labels)
    return (po - pe) / (1 - pe) * 100


def test_agreement_and_the_export_rule(flagged_folder, tmp_path):
    rf = ReviewFolder(tmp_path / "rv", flagged_folder, repeat_share=0.0)
    order = rf.order
    g1 = [k for k in order if k[0] == order[0][0]]  # the first group's three turned items
    g2 = [k for k in order if k[0] == order[3][0]]
    g3 = [k for k in order if k[0] == order[6][0]]
    plan = {  # item -> (ann1, ann2): accept / discard / a correction's answer
        g1[0]: ("accept", "accept"), g1[1]: ("fix:x", "accept"), g1[2]: ("accept", "accept"),
        g2[0]: ("accept", "discard"), g2[1]: ("accept", "accept"), g2[2]: ("accept", "accept"),
        g3[0]: ("fix:y", "fix:z"), g3[1]: ("accept", "accept"), g3[2]: ("accept", "accept"),
    }
    for i, name in enumerate(("ann1", "ann2")):
        for key, pair in plan.items():
            d = pair[i]
            entry = ReviewEntry(*key)
            if d.startswith("fix:"):
                rf.record(name, entry, "correct", "answer", answers=[d[4:]])
            else:
                rf.record(name, entry, d, "" if d == "accept" else "mirror")
    s = review_stats(tmp_path / "rv")
    a = [p[0].split(":")[0].replace("fix", "correct") for p in plan.values()]
    b = [p[1].split(":")[0].replace("fix", "correct") for p in plan.values()]
    assert s["pairs"]["ann1 / ann2"]["kappa"] == pytest.approx(_kappa_by_hand(a, b))
    assert s["pairs"]["ann1 / ann2"]["items"] == 9
    flagged = [bool(rf.rules[k]) for k in plan]
    changed = [x != "accept" for x in a] + [x != "accept" for x in b]
    agree = sum(f == c for f, c in zip(flagged * 2, changed))
    assert s["checker"]["agreement"] == pytest.approx(agree / 18 * 100)
    out = export_rotations(flagged_folder, tmp_path / "rv", tmp_path / "rel")
    # g1 kept with ann1's correction; g2 dropped (a discard); g3 disputed (corrections differ)
    assert out["exported"] == 1 and out["items"]["discarded"] == 1
    assert out["items"]["disputed"] == 1
    r90 = json.loads((tmp_path / "rel/rotation_90.json").read_text())["questions"]
    assert [q["question_id"] for q in r90] == [int(order[0][0]) * 100 + 1]
    assert main(["import-real3dqa", "--release", str(tmp_path / "rel"), "--out",
                 str(tmp_path / "imp")]) == 0
    rot = load_local(tmp_path / "imp", "rotations").to_pandas()
    assert set(rot.source) == {"reviewed"} and len(rot) == 4
    fixed = rot[rot.rotation_deg == g1[1][1]]
    assert list(fixed.answers.iloc[0]) == ["x"]
    card = (tmp_path / "imp/README.md").read_text()
    assert "## Review" in card and "92%" in card and "97%" in card
    assert f"{s['kappa_mean']:.1f}%" in card


def _field(page, elem_id):
    return page.locator(f"#{elem_id} textarea, #{elem_id} input").first


@pytest.mark.slow
def test_review_tab_two_annotators_in_a_browser(flagged_folder, tmp_path):
    """Two annotators in two browser sessions accept, correct and discard items (one of them
    meets a repeated item); review-stats gives the kappa and self-consistency computed by
    hand, and export-rotations + import-real3dqa round-trip the kept group."""
    import socket

    from playwright.sync_api import sync_playwright

    from hf_real3d import app as A

    review = tmp_path / "rv"
    data = A.ExplorerData.load(str(flagged_folder), review=str(review),
                               review_settings={"repeat_share": 0.3, "repeat_gap": 1})
    rf = data.review
    order = rf.order

    def plan(name, entry, firsts):
        """What each annotator decides: by the item's place in the base order."""
        i = order.index((entry.question_id, entry.rotation_deg))
        if entry.repeat:  # an accepted item is discarded the second time: inconsistent
            first = firsts[(entry.question_id, entry.rotation_deg)]
            return ("discard", "second look") if first[0] == "accept" else first
        if name == "ann1":
            return {1: ("correct", "zzz"), 3: ("discard", "mirror")}.get(i, ("accept", ""))
        return {4: ("discard", "mirror")}.get(i, ("accept", ""))

    app = A.build_app(data=data)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    A.launch(app, port=port, block=False, quiet=True)
    made = {"ann1": [], "ann2": []}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
            pages = {}
            for name in made:  # two sessions, as two people at once
                pg = browser.new_context().new_page()
                pg.goto(f"http://127.0.0.1:{port}/")
                pg.get_by_role("tab", name="Review").click()
                _field(pg, "rv-name").fill(name)
                pg.locator("#rv-start").click()
                pg.wait_for_selector("#rv-item", timeout=60000)
                pages[name] = pg
            queues = {n: rf.queue(n) for n in made}
            steps = {"ann1": next(i for i, e in enumerate(queues["ann1"]) if e.repeat) + 1,
                     "ann2": 6}
            assert steps["ann1"] >= 5, "the repeat should come after a few items"
            firsts = {"ann1": {}, "ann2": {}}
            for k in range(max(steps.values())):
                for name, pg in pages.items():
                    if k >= steps[name]:
                        continue
                    entry = queues[name][k]
                    shown = pg.locator("#rv-item")
                    assert shown.get_attribute("data-qid") == str(entry.question_id)
                    assert shown.get_attribute("data-deg") == str(entry.rotation_deg)
                    decision, text = plan(name, entry, firsts[name])
                    if not entry.repeat:
                        firsts[name][(entry.question_id, entry.rotation_deg)] = (decision,
                                                                                 text)
                    if decision == "correct":
                        _field(pg, "rv-answers").fill(text)
                        _field(pg, "rv-reason").fill("wrong answer")
                    elif decision == "discard":
                        _field(pg, "rv-reason").fill(text)
                    pg.locator(f"#rv-{decision}").click()
                    pg.wait_for_function(
                        "n => (document.querySelector('#rv-item') || {}).innerText"
                        "?.startsWith('item ' + n + ' of')", arg=k + 2, timeout=30000)
                    made[name].append((entry, decision))
            browser.close()
    finally:
        app.close()
    # review-stats from the command line, against a hand computation
    assert main(["review-stats", str(review)]) == 0
    s = json.loads((review / "stats.json").read_text())
    first = {n: {(e.question_id, e.rotation_deg): d for e, d in made[n] if not e.repeat}
             for n in made}
    both = sorted(set(first["ann1"]) & set(first["ann2"]), key=str)
    assert s["pairs"]["ann1 / ann2"]["items"] == len(both) >= 3
    assert s["pairs"]["ann1 / ann2"]["kappa"] == pytest.approx(_kappa_by_hand(
        [first["ann1"][k] for k in both], [first["ann2"][k] for k in both]))
    reps = [(first["ann1"][(e.question_id, e.rotation_deg)], d) for e, d in made["ann1"]
            if e.repeat]
    assert reps and s["annotators"]["ann1"]["self_consistency"] == pytest.approx(
        sum(a == b for a, b in reps) / len(reps) * 100)
    lines = [json.loads(x) for x in (review / "ann1.jsonl").read_text().splitlines()]
    assert [x["decision"] for x in lines] == [d for _, d in made["ann1"]]
    assert lines[1]["answers"] == ["zzz"]
    # the first group (items 0-2): kept with ann1's correction; the second has a discard
    assert main(["export-rotations", "--dataset", str(flagged_folder), "--reviews",
                 str(review), "--out", str(tmp_path / "rel")]) == 0
    assert main(["import-real3dqa", "--release", str(tmp_path / "rel"), "--out",
                 str(tmp_path / "imp")]) == 0
    rot = load_local(tmp_path / "imp", "rotations").to_pandas()
    assert set(rot.question_id) == {order[0][0]}
    assert list(rot[rot.rotation_deg == order[1][1]].answers.iloc[0]) == ["zzz"]
