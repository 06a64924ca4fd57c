"""lmms-eval hooks for the hf_real3d tasks: prompts, per-document results, and aggregations
that call hf_real3d's own metrics (the same code as ``hf-real3d evaluate`` and
``hf-real3d evaluate-3dsrbench``).

Loaded by lmms-eval through ``!function utils.<name>`` from the task YAMLs that
``hf-real3d lmms-tasks`` writes; needs ``hf_real3d`` importable where lmms-eval runs.
"""

from hf_real3d.lmms import SRBENCH_LMMS_METRICS
from hf_real3d.scoring import answer_correctness, vrs
from hf_real3d.srbench.evaluate import prompt_for
from hf_real3d.srbench.format import CATEGORIES
from hf_real3d.srbench.rules import lmms_eval_choice, lmms_eval_metrics

# --- Real-3DQA -----------------------------------------------------------------------------

REAL3DQA_PROMPT = ("Situation: {situation}\nQuestion: {question}\n"
                   "Answer the question using a single word or phrase.")


_VIEWS = None  # (question_id, rotation_deg) -> images, from the dataset's views config


def _views():
    """The views config named in ``views.json`` beside this file (written by
    ``hf-real3d lmms-tasks`` when the dataset has one), loaded once."""
    global _VIEWS
    if _VIEWS is None:
        # this file runs inside lmms-eval: loaded on the first document that asks for views
        import json
        from pathlib import Path

        spec = Path(__file__).with_name("views.json")
        _VIEWS = {}
        if spec.is_file():
            # only tasks whose dataset has a views config load it
            import datasets

            info = json.loads(spec.read_text())
            ds = datasets.load_dataset(info["path"], "views", split=info.get("split", "test"))
            for row in ds:
                _VIEWS[(str(row["question_id"]), int(row["rotation_deg"]))] = row["images"]
    return _VIEWS


def real3dqa_doc_to_visual(doc):
    """The question's rendered views (BEV + the agent's egocentric frame) when the dataset
    has a views config; else none: the scene is a point cloud (``scene_id`` in the
    document), which a 3D-LLM's lmms-eval model wrapper reads from the scenes config."""
    key = (str(doc["question_id"]), int(doc.get("rotation_deg") or 0))
    return [im.convert("RGB") for im in _views().get(key, [])]


def real3dqa_doc_to_text(doc, lmms_eval_specific_kwargs=None):
    """The Real-3DQA prompt of one document: situation and question, with lmms-eval's pre- and
    post-prompt."""
    kw = lmms_eval_specific_kwargs or {}
    text = REAL3DQA_PROMPT.format(situation=doc["situation"].strip(),
                                  question=doc["question"].strip())
    return kw.get("pre_prompt", "") + text + kw.get("post_prompt", "")


def real3dqa_doc_to_target(doc):
    """The first accepted answer of a Real-3DQA document."""
    return doc["answers"][0]


def real3dqa_process_results(doc, results):
    """One entry per document, the same for every metric: the aggregations need the whole
    set (P_k and VRS look at every viewpoint of a question)."""
    entry = {"question_id": int(doc["question_id"]),
             "rotation_deg": int(doc.get("rotation_deg", 0) or 0),
             "prediction": results[0] if results else "",
             "answers": list(doc["answers"]),
             "question_type": doc.get("question_type", "")}
    return {m: entry for m in ("em", "em_refined", "p_at_least_1", "p_at_least_2",
                               "p_at_least_3", "p_at_least_4", "vrs")}


def _correct(entries):
    return answer_correctness([e["prediction"] for e in entries],
                              [e["answers"] for e in entries])


def real3dqa_em(entries):
    """EM (%) over every scored Real-3DQA entry."""
    return float(_correct(entries)[0].mean() * 100)


def real3dqa_em_refined(entries):
    """Refined EM (%) over every scored Real-3DQA entry."""
    return float(_correct(entries)[1].mean() * 100)


def _vrs(key):
    """The aggregation of one of P_1..P_4 and VRS (%) over the rotation groups (NaN where
    fewer viewpoints leave P_k undefined): a named hook per figure, as the task YAML's
    ``!function utils.real3dqa_<figure>`` asks."""
    def aggregate(entries):
        _, refined = _correct(entries)
        return vrs(refined, [e["question_id"] for e in entries],
                   [e["rotation_deg"] for e in entries], incomplete="drop").get(key, float("nan"))

    aggregate.__name__ = f"real3dqa_{key}"
    return aggregate


real3dqa_p_at_least_1 = _vrs("p_at_least_1")
real3dqa_p_at_least_2 = _vrs("p_at_least_2")
real3dqa_p_at_least_3 = _vrs("p_at_least_3")
real3dqa_p_at_least_4 = _vrs("p_at_least_4")
real3dqa_vrs = _vrs("vrs")


# --- 3DSRBench -----------------------------------------------------------------------------

#: lmms-eval's own 3dsrbench_circular metric names, with its values
SRBENCH_METRICS = SRBENCH_LMMS_METRICS


def srbench_doc_to_visual(doc):
    """The image of a 3DSRBench document, as RGB."""
    return [doc["image"].convert("RGB")]


def srbench_doc_to_text(doc, lmms_eval_specific_kwargs=None):
    """The prompt ``hf-real3d evaluate-3dsrbench`` gives (VLMEvalKit style)."""
    kw = lmms_eval_specific_kwargs or {}
    return kw.get("pre_prompt", "") + prompt_for(doc) + kw.get("post_prompt", "")


def srbench_process_results(doc, results):
    """As lmms-eval's 3dsrbench tasks: its letter extraction, a 0/1 score, the qid and the
    category per document (so a logged sample reads like upstream's)."""
    pred = results[0].strip() if results else ""
    entry = {"index": doc.get("index"), "qid": doc["qid"],
             "score": 1.0 if lmms_eval_choice(pred) == doc["answer"] else 0.0,
             "category": doc["category"], "main_category": CATEGORIES.get(doc["category"],
                                                                          "other")}
    return {m: entry for m in SRBENCH_METRICS}


def _srbench(metric):
    """lmms-eval's aggregation of ``metric`` over the documents' entries (a named hook per
    metric, as the task YAML's ``!function utils.srbench_<metric>`` asks)."""
    def aggregate(entries):
        return lmms_eval_metrics([e["qid"] for e in entries], [e["score"] for e in entries],
                                 [e["category"] for e in entries])[metric]

    aggregate.__name__ = f"srbench_{metric}"
    return aggregate


srbench_vanilla_accuracy = _srbench("vanilla_accuracy")
srbench_flip_accuracy = _srbench("flip_accuracy")
srbench_circular_accuracy = _srbench("circular_accuracy")
srbench_flip_circular_accuracy = _srbench("flip_circular_accuracy")
srbench_height_accuracy = _srbench("height_accuracy")
srbench_location_accuracy = _srbench("location_accuracy")
srbench_orientation_accuracy = _srbench("orientation_accuracy")
srbench_multi_object_accuracy = _srbench("multi_object_accuracy")


# --- Real-ScanQA: no situation, no rotation --------------------------------------------------

REAL_SCANQA_PROMPT = "Question: {question}\nAnswer the question using a single word or phrase."


def real_scanqa_doc_to_visual(doc):
    """No image: the scene is a point cloud (``scene_id`` in the document), which a 3D-LLM's
    lmms-eval model wrapper reads from its own scene data."""
    return []


def real_scanqa_doc_to_text(doc, lmms_eval_specific_kwargs=None):
    """The Real-ScanQA prompt of one document, with lmms-eval's pre- and post-prompt."""
    kw = lmms_eval_specific_kwargs or {}
    text = REAL_SCANQA_PROMPT.format(question=doc["question"].strip())
    return kw.get("pre_prompt", "") + text + kw.get("post_prompt", "")


real_scanqa_doc_to_target = real3dqa_doc_to_target  # the first accepted answer


def real_scanqa_process_results(doc, results):
    """One entry per document for every Real-ScanQA metric: its id, the prediction and the accepted
    answers."""
    entry = {"question_id": str(doc["question_id"]),
             "prediction": results[0] if results else "", "answers": list(doc["answers"])}
    return {m: entry for m in ("em", "em_refined")}


# EM and refined EM (%) over every scored entry, as for Real-3DQA
real_scanqa_em = real3dqa_em
real_scanqa_em_refined = real3dqa_em_refined
