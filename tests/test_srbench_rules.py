"""3DSRBench figures equal to the field's scorers (hf_real3d.srbench.rules).

Each rule is checked three ways: on a hand-made table whose figures were worked out by
hand, against a loop written here the way the scorer writes it (on random hits and qid
sets), and through the files those scorers read and write.
"""

import json
import re
import string

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hf_real3d._io import FormatError
from hf_real3d.scoring import MetricInputError
from hf_real3d.srbench import GROUPS, load_rows, read_tsv, score_rows
from hf_real3d.srbench.predictions import read_srbench_answers
from hf_real3d.srbench.rules import (
    RULES,
    authors_results,
    check_qids,
    lmms_eval_choice,
    lmms_eval_metrics,
    official_figures,
    settings_table,
    vlmevalkit_choice,
    vlmevalkit_settings,
)

# --- the scorers' loops, transcribed here from reading them ---------------------------------

SUBTYPES = [c for cs in GROUPS.values() for c in cs]


def vlmevalkit_loop(qids, hits, cats):
    """VLMEvalKit's _3DSRBench.evaluate after the hits: report_acc on the head rows."""
    df = pd.DataFrame({"qid": qids, "hit": hits, "category": cats})

    def report(d):
        res = {"Overall": np.mean(d["hit"])}
        for ab in sorted(set(d["category"])):
            res[ab] = np.mean(d[d["category"] == ab]["hit"])
        return res

    out = {"vanilla": report(df)}
    for name, key in (("flip_eval", lambda x: x.replace("-flip", "")),
                      ("circ_eval", lambda x: x[:8] if "-flip" not in x else x[:13]),
                      ("flip_circ_eval", lambda x: x[:8])):
        qid2key = {x: key(x) for x in df["qid"]}
        main = df[df["qid"].isin(set(qid2key.values()))].copy()
        hit_map = dict(zip(main["qid"], main["hit"]))
        for x, y in zip(df["qid"], df["hit"]):
            hit_map[qid2key[x]] *= y
        main["hit"] = [hit_map[x] for x in main["qid"]]
        out[name] = report(main)
    return out


def lmms_loop(qids, scores, cats):
    """lmms-eval's 3dsrbench aggregations, one loop each."""
    mapping = {c: g for g, cs in GROUPS.items() for c in cs}

    def grouped(key):
        groups = {}
        for q, s in zip(qids, scores):
            groups.setdefault(key(q), []).append(s)
        correct = 0
        for ss in groups.values():
            g = 1.0
            for s in ss:
                g *= s
            correct += g == 1.0
        return correct / len(groups) if groups else 0.0

    out = {"vanilla_accuracy": sum(scores) / len(scores) if scores else 0.0,
           "flip_accuracy": grouped(lambda q: q.replace("-flip", "")),
           "circular_accuracy": grouped(lambda q: q[:13] if "-flip" in q else q[:8]),
           "flip_circular_accuracy": grouped(lambda q: q[:8])}
    for g in GROUPS:
        ss = [s for s, c in zip(scores, cats) if mapping.get(c, "other") == g]
        out[f"{g}_accuracy"] = sum(ss) / len(ss) if ss else 0.0
    for c in SUBTYPES:
        ss = [s for s, k in zip(scores, cats) if k == c]
        out[f"{c}_accuracy"] = sum(ss) / len(ss) if ss else 0.0
    return out


def authors_loop(table_rows):
    """compute_3dsrbench_results.py on rows of a VLMEvalKit result table read by position
    (qid at 1, category at 8, hit at 12)."""
    results = {}
    for row in table_rows:
        assert row[12] in [0, 1]
        qid = row[1][:-2] if row[1][-2] == "-" else row[1]
        if qid in results:
            results[qid][0] = results[qid][0] * row[12]
        else:
            results[qid] = [row[12], row[8]]

    def pct(vals):
        return float(np.round(np.mean(vals) * 100, decimals=1)) if vals else None

    out = {"overall": pct([v[0] for v in results.values()])}
    for t, subs in GROUPS.items():
        out[t] = pct([v[0] for v in results.values() if v[1] in subs])
    for t in SUBTYPES:
        out[t] = pct([v[0] for v in results.values() if v[1] == t])
    return out


# --- a hand-made table ---------------------------------------------------------------------

HAND = [  # qid, hit, category
    ("AAAAAAAA", 1, "height_higher"), ("AAAAAAAA-1", 1, "height_higher"),
    ("AAAAAAAA-flip", 1, "height_higher"), ("AAAAAAAA-flip-1", 0, "height_higher"),
    ("BBBBBBBB", 1, "orientation_on_the_left"), ("BBBBBBBB-1", 1, "orientation_on_the_left"),
    ("BBBBBBBB-flip", 1, "orientation_on_the_left"),
    ("BBBBBBBB-flip-1", 1, "orientation_on_the_left"),
    ("CCCCCCCC", 1, "multi_object_facing"), ("CCCCCCCC-1", 0, "multi_object_facing"),
    ("CCCCCCCC-2", 1, "multi_object_facing"), ("CCCCCCCC-3", 1, "multi_object_facing"),
]
HQ, HH, HC = (list(x) for x in zip(*HAND))


def test_vlmevalkit_on_the_hand_made_table():
    s = vlmevalkit_settings(HQ, HH, HC)
    # vanilla: 10 of 12 rows; flip: 6 of 8 original rows with their mirror; circular: groups
    # A, A-flip, B, B-flip, C -> 1, 0, 1, 1, 0; flip+circular: A, B, C -> 0, 1, 0
    assert s["vanilla"] == {"Overall": 10 / 12, "height_higher": 0.75,
                            "multi_object_facing": 0.75, "orientation_on_the_left": 1.0}
    assert s["flip_eval"] == {"Overall": 0.75, "height_higher": 0.5,
                              "multi_object_facing": 0.75, "orientation_on_the_left": 1.0}
    assert s["circ_eval"] == {"Overall": 0.6, "height_higher": 0.5, "multi_object_facing": 0.0,
                              "orientation_on_the_left": 1.0}
    assert s["flip_circ_eval"] == {"Overall": 1 / 3, "height_higher": 0.0,
                                   "multi_object_facing": 0.0, "orientation_on_the_left": 1.0}


def test_lmms_eval_on_the_hand_made_table():
    m = lmms_eval_metrics(HQ, [float(h) for h in HH], HC)
    assert (m["vanilla_accuracy"], m["flip_accuracy"], m["circular_accuracy"],
            m["flip_circular_accuracy"]) == (10 / 12, 0.75, 0.6, 1 / 3)
    # per type, lmms-eval reports row (vanilla) accuracy, whatever the task's setting
    assert (m["height_accuracy"], m["location_accuracy"], m["orientation_accuracy"],
            m["multi_object_accuracy"]) == (0.75, 0.0, 1.0, 0.75)
    assert m["multi_object_facing_accuracy"] == 0.75 and m["location_above_accuracy"] == 0.0


def test_authors_on_the_hand_made_table():
    r = authors_results(HQ, HH, HC)
    assert list(r) == ["overall", *GROUPS, *SUBTYPES]  # the script's column order
    assert (r["overall"], r["height"], r["orientation"], r["multi_object"]) == \
        (60.0, 50.0, 100.0, 0.0)
    assert r["location"] is None and r["location_above"] is None  # the script prints nan
    assert r["multi_object_facing"] == 0.0 and r["orientation_on_the_left"] == 100.0


def test_library_table_is_every_rule_in_percent():
    t = settings_table(HQ, HH, HC)
    assert t["circular"]["overall"] == pytest.approx(60.0)
    assert t["circular"]["per_group"] == pytest.approx({"height": 50.0, "orientation": 100.0,
                                                        "multi_object": 0.0})
    v = vlmevalkit_settings(HQ, HH, HC)
    for ours, theirs in (("vanilla", "vanilla"), ("flip", "flip_eval"),
                         ("circular", "circ_eval"), ("flip_circular", "flip_circ_eval")):
        assert t[ours]["overall"] == pytest.approx(v[theirs]["Overall"] * 100)


# --- extraction, hand-worked cases ------------------------------------------------------------

@pytest.mark.parametrize("prediction,options,letter", [
    ("B", "AB", "B"),
    ("(B)", "AB", "B"),
    ("B. right", "AB", "B"),
    ("The answer is B", "AB", "B"),           # 'B' is the last word
    ("The correct answer is **C**.", "ABCD", "C"),
    ("A or B", "AB", None),                   # two letters, no statement
    ("Option A, though B is close", "AB", None),  # two letters
    ("A: because the lamp sits above the table and far away", "AB", "A"),  # stated? no:
    ("right", "AB", "B"),                     # the one option text inside a short answer
    ("It is on the right.", "AB", None),      # too long for the text rule (19 > 2 x 9)
    ("left or right", "AB", None),            # two option texts
    ("Z", "AB", "Z"),
    ("Cannot determine the answer", "AB", "Z"),
    ("Failed to obtain answer via API", "AB", None),
    ("nan", "AB", None),                      # a missing prediction, as VLMEvalKit reads it
])
def test_vlmevalkit_exact_matching(prediction, options, letter):
    texts = {"A": "left", "B": "right", "C": "behind", "D": "in front"}
    got = vlmevalkit_choice(prediction, {k: texts[k] for k in options})
    if prediction.startswith("A: because"):  # 'A' is not among the last four words
        letter = None
    assert got == letter


@pytest.mark.parametrize("prediction,letter", [
    ("B", "B"), ("  C  ", "C"), ("D) in front", "D"), ("Answer: A", "A"),
    ("the answer is  B", "B"), ("My answer is C.", "C"), ("I choose (D)", "D"),
    ("pick B. then", "B"), ("on the right", None), ("", None), ("a", None),
    ("It is A or B", "A"),  # the last pattern takes the first standalone letter
    ("E", None),
])
def test_lmms_eval_extraction(prediction, letter):
    assert lmms_eval_choice(prediction) == letter


# --- every rule equals its scorer's loop, on random hits and qid sets --------------------------

@st.composite
def benchmark(draw):
    n_q = draw(st.integers(1, 8))
    bases = draw(st.lists(st.text(string.ascii_uppercase + string.digits, min_size=8,
                                  max_size=8), min_size=n_q, max_size=n_q, unique=True))
    rows = []
    for b in bases:
        n = draw(st.sampled_from([2, 4]))
        cat = draw(st.sampled_from(SUBTYPES))
        orders = [0] + [k for k in range(1, n) if draw(st.booleans())]
        flip = draw(st.booleans())
        for k in orders:
            rows.append((b + (f"-{k}" if k else ""), cat, n))
            if flip and (k == 0 or draw(st.booleans())):
                rows.append((b + "-flip" + (f"-{k}" if k else ""), cat, n))
    # every mirrored order needs its unshifted mirrored row (the group's head)
    heads = {q for q, _, _ in rows}
    rows = [r for r in rows if "-flip" not in r[0] or r[0][:13] in heads]
    perm = draw(st.permutations(range(len(rows))))
    hits = draw(st.lists(st.integers(0, 1), min_size=len(rows), max_size=len(rows)))
    return [rows[i] for i in perm], hits


@settings(max_examples=150, deadline=None)
@given(benchmark())
def test_every_rule_equals_its_scorers_loop(data):
    rows, hits = data
    qids, cats = [r[0] for r in rows], [r[1] for r in rows]
    check_qids(qids, cats)
    assert vlmevalkit_settings(qids, hits, cats) == vlmevalkit_loop(qids, hits, cats)
    assert lmms_eval_metrics(qids, [float(h) for h in hits], cats) == \
        lmms_loop(qids, [float(h) for h in hits], cats)
    table = [[i, q, "", "a", "b", "", "", "A", c, "", "", "A", h] for i, (q, c, h)
             in enumerate(zip(qids, cats, hits))]
    assert authors_results(qids, hits, cats) == authors_loop(table)
    # the library's own table: the same four figures in percent
    t, v = settings_table(qids, hits, cats), vlmevalkit_settings(qids, hits, cats)
    assert t["circular"]["overall"] == pytest.approx(v["circ_eval"]["Overall"] * 100)
    assert t["flip"]["overall"] == pytest.approx(v["flip_eval"]["Overall"] * 100)


@pytest.mark.parametrize("qids,match", [
    (["syn0-0001-c03"], "not of 3DSRBench's form"),
    (["AAAAAAAA", "AAAAAAAA"], "repeats row 0"),
    (["AAAAAAAA-flip"], "has no original"),
    (["AAAAAAAA-1"], "no unshifted row 'AAAAAAAA'"),
    (["AAAAAAAA", "AAAAAAAA-flip-1", "AAAAAAAA-1"], "no unshifted row 'AAAAAAAA-flip'"),
])
def test_qids_the_scorers_would_group_wrongly_are_refused(qids, match):
    with pytest.raises(MetricInputError, match=match):
        check_qids(qids)


# --- the scorers' own files ---------------------------------------------------------------

def _result_table(hits=None, predictions=None):
    """A VLMEvalKit table in its column order (the TSV without the image, then prediction,
    hit, log), over the hand-made qids: 2-option rows leave C and D empty."""
    rows = []
    for i, (q, _, c) in enumerate(HAND):
        four = c == "multi_object_facing"
        opts = ["left", "right", "behind", "in front"] if four else ["yes", "no", None, None]
        rows.append({"index": i, "qid": q, "question": f"question {q[:8]}?",
                     "A": opts[0], "B": opts[1], "C": opts[2], "D": opts[3], "answer": "A",
                     "category": c, "image_source": "x", "image_url": "",
                     "prediction": (predictions or ["A"] * len(HAND))[i]})
        if hits is not None:
            rows[-1].update(hit=hits[i], log="")
    return pd.DataFrame(rows)


def test_result_table_hits_are_taken_as_given(tmp_path):
    """A *_result.xlsx's hits (maybe its LLM judge's) are scored as they are, even where the
    prediction text would read otherwise; the authors' figures equal their script's
    positional loop on the same file."""
    from hf_real3d.cli import main

    f = tmp_path / "MyVLM_3DSRBench_result.xlsx"
    # every prediction says "A" (the right letter), but the hits are the judge's
    _result_table(hits=HH).to_excel(f, index=False)
    for rule in ("authors", "vlmevalkit"):
        out = tmp_path / rule
        assert main(["evaluate-3dsrbench", "--predictions", f"m={f}", "--rule", rule,
                     "--out", str(out)]) == 0
        m = json.loads((out / "metrics.json").read_text())
        assert m["rule"] == rule
        got = m["file"]["m"]["official"]
        if rule == "authors":
            assert got == authors_loop(pd.read_excel(f).values.tolist())
        else:
            assert got == vlmevalkit_loop(HQ, HH, HC)
        assert m["file"]["m"]["circular"]["overall"] == pytest.approx(60.0)


def test_raw_prediction_table_is_read_with_vlmevalkits_matching(tmp_path):
    from hf_real3d.cli import main

    preds = ["A", "yes", "A", "the answer is B", "yes", "A", "A", "no", "left", "B",
             "left or behind", "A"]
    f = tmp_path / "MyVLM_3DSRBench.xlsx"
    _result_table(predictions=preds).to_excel(f, index=False)
    out = tmp_path / "o"
    assert main(["evaluate-3dsrbench", "--predictions", f"m={f}", "--out", str(out)]) == 0
    m = json.loads((out / "metrics.json").read_text())["file"]
    # worked by hand: 'yes' is option A's text; 'the answer is B' and 'no' are B; 'left or
    # behind' names two options (unread)
    hits = [1, 1, 1, 0, 1, 1, 1, 0, 1, 0, 0, 1]
    assert m["m"]["official"] == vlmevalkit_loop(HQ, hits, HC)
    assert m["m"]["unparsed"] == 1
    # baselines come from the file's own items
    assert m["random"]["circular"]["overall"] == pytest.approx((2 * .25 * 2 + .25 ** 4) / 5 * 100)


def _samples_file(path, scores, responses):
    """lmms-eval's --log_samples JSONL of its 3dsrbench_circular task (doc popped, as
    upstream writes it)."""
    metrics = ("vanilla_accuracy", "flip_accuracy", "circular_accuracy",
               "flip_circular_accuracy", "height_accuracy", "location_accuracy",
               "orientation_accuracy", "multi_object_accuracy")
    with open(path, "w") as f:
        for i, ((q, _, c), s, r) in enumerate(zip(HAND, scores, responses)):
            entry = {"index": i, "qid": q, "score": s, "category": c,
                     "main_category": {c: g for g, cs in GROUPS.items() for c in cs}[c]}
            line = {"doc_id": i, "target": "A", "filtered_resps": r, "doc_hash": "x",
                    "input": "Question: ...", **{m: entry for m in metrics}}
            f.write(json.dumps(line) + "\n")


def test_lmms_eval_samples_scored_as_lmms_eval_scores_them(tmp_path):
    from hf_real3d.cli import main

    responses = ["A", "A.", "(A)", "no idea", "A", "A", "A", "A", "A", "B", "A", "A"]
    scores = [float(lmms_eval_choice(r) == "A") for r in responses]
    f = tmp_path / "20260101_samples_3dsrbench_circular.jsonl"
    _samples_file(f, scores, responses)
    out = tmp_path / "o"
    assert main(["evaluate-3dsrbench", "--predictions", f"m={f}", "--rule", "lmms_eval",
                 "--out", str(out)]) == 0
    got = json.loads((out / "metrics.json").read_text())["file"]["m"]["official"]
    assert got == lmms_loop(HQ, scores, HC)
    assert got["circular_accuracy"] == 0.6  # 'no idea' breaks A-flip, 'B' breaks C
    # other rules read option texts, which the samples do not carry
    assert main(["evaluate-3dsrbench", "--predictions", f"m={f}", "--out", str(out)]) == 2


def test_a_repeated_qid_in_jsonl_predictions_is_refused(tmp_path):
    from hf_real3d.srbench.predictions import read_srbench_answers

    f = tmp_path / "p.jsonl"
    f.write_text('{"qid": "AAAAAAAA", "prediction": "A"}\n'
                 '{"qid": "AAAAAAAA", "prediction": "B"}\n')
    with pytest.raises(FormatError, match="qid 'AAAAAAAA' is answered twice"):
        read_srbench_answers(f"m={f}")


# --- exported TSVs --------------------------------------------------------------------------

def test_exported_tsvs_have_the_real_qid_form_and_score_as_their_folder(tmp_path):
    from helpers.data import three_question_srbench

    from hf_real3d.srbench.format import QID_FORM

    folder = three_question_srbench(tmp_path / "srb", export_tsv=True)
    rng = np.random.default_rng(0)
    for config in ("synthetic_common", "synthetic_uncommon"):
        tsv_rows = read_tsv(folder / "tsv" / f"{config}.tsv")
        folder_rows = load_rows(folder, config)
        assert len(tsv_rows) == len(folder_rows) == 16
        assert all(QID_FORM.match(r["qid"]) for r in tsv_rows)
        # 3 questions + 1 complementary, which has a base of its own
        assert len({r["qid"][:8] for r in tsv_rows}) == len({r["question"] for r in tsv_rows}) == 4
        answers = {r["qid"]: str(rng.choice(["A", "B", "the answer is A", "yes", "lamp", "x"]))
                   for r in folder_rows}
        for rule in RULES:
            a = score_rows(folder_rows, [answers[r["qid"]] for r in folder_rows], rule=rule)
            b = score_rows(tsv_rows, [answers[r["qid"]] for r in tsv_rows], rule=rule)
            assert a == b, rule


def test_importer_refuses_a_qid_of_another_form(tmp_path):
    from hf_real3d.srbench import write_tsv

    row = {"index": 0, "qid": "syn0-0001-c03", "question": "Is it higher?", "A": "yes",
           "B": "no", "C": "", "D": "", "answer": "A", "category": "height_higher",
           "image": "", "image_source": "", "image_url": ""}
    write_tsv([row], tmp_path / "x.tsv")
    with pytest.raises(FormatError, match=r"x\.tsv row 0 \(qid syn0-0001-c03\).*not of "
                                          r"3DSRBench's form"):
        read_tsv(tmp_path / "x.tsv", decode_images=False)


def test_authors_random_is_a_fresh_guess_per_row():
    from hf_real3d.srbench.rules import authors_random

    qids = [f"{i:08d}" for i in range(4000)]
    two = authors_random(qids, [2] * 4000, ["height_higher"] * 4000)
    four = authors_random(qids, [4] * 4000, ["height_higher"] * 4000)
    assert abs(two["overall"] - 50) < 3 and abs(four["overall"] - 25) < 3


def _samples(path, rows, score=lambda i: 1):
    """An lmms-eval --log_samples file of a 3dsrbench task for ``rows``."""
    path.write_text("\n".join(json.dumps({
        "doc_id": i, "doc": {"qid": r["qid"], "answer": r["answer"], "category": r["category"]},
        "target": r["answer"], "filtered_resps": [r["answer"]],
        "vanilla_accuracy": {"qid": r["qid"], "score": score(i), "category": r["category"]}})
        for i, r in enumerate(rows)) + "\n")
    return path


def test_lmms_samples_with_bad_scores_are_named(tmp_path):
    """Issue 39: a judge's `score: null`, a 0.5 and a samples file without filtered_resps each
    get one line naming the file, the line and the qid."""
    from hf_real3d.cli import main

    rows = [{"qid": f"T000000{i}", "answer": "A", "category": "height_higher"} for i in range(3)]
    for bad, said in ((None, "score None is not 0 or 1"), (0.5, "score 0.5 is not 0 or 1")):
        f = _samples(tmp_path / "s.jsonl", rows, lambda i, bad=bad: bad if i == 1 else 1)
        with pytest.raises(FormatError, match=rf"s\.jsonl: line 2 \(qid T0000001\): {said}"):
            read_srbench_answers(f"m={f}")
    lines = [json.loads(x) for x in (tmp_path / "s.jsonl").read_text().splitlines()]
    for x in lines:
        del x["filtered_resps"]
    (tmp_path / "t.jsonl").write_text("\n".join(json.dumps(x) for x in lines))
    with pytest.raises(FormatError, match="looks like an lmms-eval sample .* no filtered_resps"):
        read_srbench_answers(f"m={tmp_path / 't.jsonl'}")
    with pytest.raises(MetricInputError, match=r"hit 0\.5 is not 0 or 1"):
        official_figures("authors", ["T0000000", "T0000001"], [1.0, 0.5],
                         ["height_higher"] * 2, None)
    code = main(["evaluate-3dsrbench", "--rule", "lmms_eval", "--out", str(tmp_path / "o"),
                 "--predictions", f"m={_samples(tmp_path / 'u.jsonl', rows, lambda i: None)}"])
    assert code == 2 and not (tmp_path / "o").exists()


def test_report_units_empty_categories_and_unread_answers(tmp_path):
    from helpers.data import three_question_srbench

    from hf_real3d.srbench.evaluate import evaluate_dataset

    folder = three_question_srbench(tmp_path / "srb")
    from hf_real3d.srbench import load_rows

    rows = load_rows(folder, "synthetic_common")
    preds = tmp_path / "p.jsonl"
    preds.write_text("\n".join(json.dumps({"qid": r["qid"], "prediction":
                                           "A" if i % 3 else "zzz"})
                               for i, r in enumerate(rows)))
    unread = sum(1 for i in range(len(rows)) if not i % 3)
    for rule, cell in (("authors", r"\| \d+\.\d \|"), ("lmms_eval", r"\| \d\.\d{4} \|")):
        md = evaluate_dataset(folder, tmp_path / rule, configs=["synthetic_common"],
                              predictions=[f"m={preds}"], rule=rule)
        own = md[md.index(f"as `{rule}` prints it"):]
        table = own[:own.index("Answers the rule")]
        assert re.search(cell, table)
        assert bool(re.search(r"\d\.\d{4}", table)) == (rule == "lmms_eval")
        # a category with no items shows '-', not 0
        header = [h.strip() for h in table.splitlines()[2].split("|")[1:-1]]
        row = [c.strip() for c in table.splitlines()[4].split("|")[1:-1]]
        col = next(i for i, h in enumerate(header) if h.startswith("multi_object_facing"))
        assert row[col] == "-"
        assert f"m: {unread} of {len(rows)} answers could not be read under rule `{rule}`" in own
        assert "Legend:" in md
