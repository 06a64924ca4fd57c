"""What the base install (``pip install hf-real3d``, no extras) must do, run as one script so
that tests/test_install.py can run it where torch, open3d, transformers, trl, peft and
accelerate cannot be imported (a blocker on PYTHONPATH, or a fresh virtual environment).

    python light_install_script.py WORKDIR [--release FOLDER]

Writes a small Real-3DQA release-format folder and a 3DSRBench prediction table into WORKDIR,
then, through ``hf_real3d.cli.dispatch``: ``evaluate`` on the release folder, ``import-real3dqa``,
``evaluate`` on the imported dataset folder, ``evaluate-3dsrbench``, ``check-rotations`` on
``--release`` when given, and the commands that need an extra, the clone's recipe launchers
included (their one-line errors are kept); and ``load_dataset`` of the imported folder and
``evaluate.load(metric_path("vrs"))``.
Everything it saw goes to WORKDIR/results.json; the test asserts on it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import math
import subprocess
import sys
from pathlib import Path

HEAVY = ("torch", "open3d", "transformers", "trl", "peft", "accelerate")
VIEWPOINTS = (0, 90, 180, 270)
SUFFIX = {0: "", 90: "01", 180: "", 270: "03"}  # the release's question_id suffixes

# (base question_id, question, answer per viewpoint); 300 is de-biased only (no rotations)
QUESTIONS = [
    (220602000100, "What is on my left?",
     {0: "window", 90: "door", 180: "table", 270: "chair"}),
    (220602000200, "Is the door behind me?", {0: "yes", 90: "no", 180: "no", 270: "no"}),
    (220602000300, "How many chairs are in the room?", {0: "two"}),
]
WRONG = {(220602000200, 90)}  # the one wrong prediction: group 200 fails one viewpoint


def _item(qid: int, question: str, answer: str, k: int, **extra) -> dict:
    yaw = math.radians(30 - k)  # the agent turned k degrees clockwise: yaw - k
    return {"scene_id": "scene0001_00",
            "situation": f"I am standing by the bed, turned {k} degrees.",
            "alternative_situation": [], "question": question,
            "question_id": int(f"{qid}{SUFFIX[k]}"),
            "answers": [{"answer": answer, "answer_confidence": "yes", "answer_id": 1}],
            "rotation": {"_x": 0, "_y": 0, "_z": math.sin(yaw / 2), "_w": math.cos(yaw / 2)},
            "position": {"x": 0.5, "y": -0.25, "z": 0}, **extra}


def write_release(folder: Path) -> None:
    """The official release's five files, three questions, two rotation groups."""
    folder.mkdir(parents=True)
    head = {"info": {"description": "test", "version": "1.0"}, "data_type": "scannet",
            "data_subtype": "v2", "task_type": "Situated question answering",
            "license": {"name": "CC BY 4.0", "url": "http://creativecommons.org/licenses/by/4.0/"}}
    deb = [_item(q, text, ans[0], 0, question_type="object") for q, text, ans in QUESTIONS]
    (folder / "de-biased_testset_with_question_type.json").write_text(
        json.dumps({**head, "questions": deb}))
    for k in VIEWPOINTS:
        items = [_item(q, text, ans[k], k) for q, text, ans in QUESTIONS if k in ans and
                 len(ans) > 1]
        (folder / f"rotation_{k}.json").write_text(json.dumps({**head, "questions": items}))


def predictions() -> list[dict]:
    return [{"question_id": q, "rotation_deg": k,
             "prediction": "wrong" if (q, k) in WRONG else answers[k]}
            for q, _, answers in QUESTIONS for k in answers]


def write_srbench_table(path: Path) -> None:
    """A VLMEvalKit-style prediction table: two questions and their mirrored items; the model
    says "A" (yes) everywhere, right except on the mirrored left/right item."""
    rows = [("T0000001", "Is the lamp above the bed?", "A", "location_above"),
            ("T0000001-flip", "Is the lamp above the bed?", "A", "location_above"),
            ("T0000002", "Is the lamp on the left side of the bed?", "A",
             "orientation_on_the_left"),
            ("T0000002-flip", "Is the lamp on the left side of the bed?", "B",
             "orientation_on_the_left")]
    lines = ["index\tqid\tquestion\tA\tB\tC\tD\tanswer\tcategory\tprediction"]
    lines += [f"{i}\t{qid}\t{q}\tyes\tno\t\t\t{a}\t{c}\tA" for i, (qid, q, a, c) in
              enumerate(rows)]
    path.write_text("\n".join(lines) + "\n")


def run(argv: list[str]) -> dict:
    """``hf-real3d ARGV`` in this process: exit code and stderr."""
    from hf_real3d.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = main(argv)
    return {"rc": rc, "stderr": err.getvalue()}


def main(work: Path, release: Path | None) -> dict:
    out: dict = {"absent": {m: importlib.util.find_spec(m) is None for m in HEAVY}}
    try:
        import torch  # noqa: F401 - must fail: the point of the whole script
        out["torch_import"] = "imported"
    except ImportError as err:
        out["torch_import"] = type(err).__name__

    import hf_real3d

    out["metric_path"] = hf_real3d.metric_path("vrs")
    write_release(work / "release")
    preds = work / "preds.jsonl"
    preds.write_text("\n".join(json.dumps(r) for r in predictions()) + "\n")
    write_srbench_table(work / "MyVLM_3DSRBench.tsv")
    cmds = {
        "evaluate_release": ["evaluate", "--dataset", str(work / "release"),
                             "--predictions", f"m={preds}", "--out", str(work / "ev_release")],
        "import": ["import-real3dqa", "--release", str(work / "release"),
                   "--out", str(work / "folder")],
        "evaluate_folder": ["evaluate", "--dataset", str(work / "folder"),
                            "--predictions", f"m={preds}", "--out", str(work / "ev_folder")],
        "evaluate_3dsrbench": ["evaluate-3dsrbench", "--predictions",
                               f"m={work / 'MyVLM_3DSRBench.tsv'}", "--out", str(work / "srb")],
        # two commands that need an extra: one line naming it, exit code 2
        "needs_train": ["stress-test", "--dataset", str(work / "folder"), "--diagnostic", "lm",
                        "--folds", "2", "--group_by", "question_id",
                        "--out", str(work / "stress")],
        "needs_train_demo": ["demo", "--out", str(work / "demo")],
        "needs_train_recipe": ["train", "3drft", "--max_steps", "1",
                               "--output_dir", str(work / "trained")],
        "needs_train_predict": ["predict", "--model", str(work / "trained"),
                                "--out", str(work / "preds")],
    }
    if release is not None:
        cmds["check_rotations"] = ["check-rotations", "--dataset", str(release),
                                   "--out", str(work / "checks")]
    out["commands"] = {name: run(argv) for name, argv in cmds.items()}
    # the clone's launchers, as a user starts them (`python recipes/3drft.py ...`)
    launchers = Path(__file__).resolve().parents[1] / "recipes"
    for name, argv in (("3drft", ["--max_steps", "1"]), ("predict", ["--model", "m"])):
        p = subprocess.run([sys.executable, str(launchers / f"{name}.py"), *argv], cwd=work,
                           capture_output=True, text=True, timeout=300)
        out["commands"][f"needs_train_launcher_{name}"] = {"rc": p.returncode,
                                                           "stderr": p.stderr}

    import evaluate
    from datasets import load_dataset

    rot = load_dataset(str(work / "folder"), "rotations", split="test")
    out["rotations_rows"] = rot.num_rows
    vrs = evaluate.load(hf_real3d.metric_path("vrs"))
    by_id = {(r["question_id"], r["rotation_deg"]): r["prediction"] for r in predictions()}
    out["vrs_metric"] = vrs.compute(
        predictions=[by_id[(q, k)] for q, k in zip(rot["question_id"], rot["rotation_deg"])],
        references=rot["answers"], group_ids=rot["question_id"], rotations=rot["rotation_deg"])
    out["heavy_imported"] = sorted(m for m in HEAVY if m in sys.modules)
    return out


if __name__ == "__main__":
    args = sys.argv[1:]
    release = Path(args[args.index("--release") + 1]) if "--release" in args else None
    work = Path(args[0])
    result = main(work, release)
    (work / "results.json").write_text(json.dumps(result, indent=1, default=str))
