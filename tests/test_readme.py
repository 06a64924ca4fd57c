"""Runs every snippet of the documentation's how-to pages, in the site's order, in a fresh
folder; checks that the figures the pages quote are those of their recorded runs."""

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers.cli import run_cli
from helpers.docs import doc_pages, documentation
from helpers.hub_server import HubServer
from helpers.llm_servers import serve_once

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


# the order the snippets run in: each page's inputs are what an earlier page made (the site
# lists them in a reader's order, evaluate first)
RUN_ORDER = ("release.md", "rotations.md", "stress-test.md", "build.md", "llm-pipeline.md",
             "evaluate.md", "train.md", "routes.md", "hub.md", "real-scanqa.md", "srbench.md",
             "explore.md", "lmms-eval.md")


def _blocks():
    pages = doc_pages("How-to")
    assert sorted(p.name for p in pages) == sorted(RUN_ORDER)  # every how-to runs
    pages.sort(key=lambda p: RUN_ORDER.index(p.name))
    return [(lang, block, page.name) for page in pages
            for lang, block in re.findall(r"```(bash|python)\n(.*?)```", page.read_text(),
                                          flags=re.S)]


def _release_predictions(cwd: Path, folder: str, name: str):
    """Predictions of the imported release that answer every row as its gold answer."""
    from hf_real3d.real3dqa.references import load_folder_references

    refs = load_folder_references(cwd / folder)
    (cwd / name).write_text("\n".join(json.dumps(
        {"question_id": int(q), "rotation_deg": int(d), "prediction": a[0]})
        for q, d, a in zip(refs.question_id, refs.rotation_deg, refs.answers)))


def _commands(block: str):
    joined = block.replace("\\\n", " ")
    return [line.strip() for line in joined.splitlines() if line.strip()]


def _predictions(cwd: Path):
    from hf_real3d.sqa3d import read_split

    recs = read_split(cwd / "data/synth/sqa3d", "test")
    for name, right in (("full.jsonl", lambda r: True),
                        ("blind.jsonl", lambda r: r.extra["synth"]["guessable"])):
        (cwd / name).write_text("\n".join(json.dumps(
            {"question_id": r.question_id, "prediction": r.answers[0] if right(r) else "zzz",
             "log_prob": -0.5}) for r in recs))


def _scanqa_predictions(cwd: Path):
    """A full model that answers every ScanQA question and a blind one that answers the
    colour questions only."""
    from hf_real3d.scanqa import read_scanqa

    df = read_scanqa(next((cwd / "data/synth/scanqa").glob("*.json")))
    for name, right in (("scanqa_full.jsonl", lambda q: True),
                        ("scanqa_blind.jsonl", lambda q: q.startswith("What color"))):
        (cwd / name).write_text("\n".join(json.dumps(
            {"question_id": q, "prediction": a[0] if right(t) else "zzz"})
            for q, t, a in zip(df.question_id, df.question, df.answers)))


@pytest.mark.slow
def test_readme_snippets(tmp_path, real_dir):
    env = dict(os.environ, HF_DATASETS_CACHE=str(tmp_path / "dsc"), OMP_NUM_THREADS="2",
               PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    ran = []
    from helpers.tiny_vlm import save_tiny_vlm

    llava = save_tiny_vlm(tmp_path / "tiny_llava")
    ns: dict = {}  # python blocks run in order in one namespace, as a reader pastes them
    with HubServer() as hub:
        hub_env = dict(env, HF_ENDPOINT=hub.url, HF_HUB_OFFLINE="0", HF_DATASETS_OFFLINE="0",
                       HF_HUB_DISABLE_XET="1", HF_TOKEN="hf_test",
                       HF_HUB_CACHE=str(tmp_path / "hubc"))
        for lang, block, page in _blocks():
            if lang == "python":
                block = block.replace('"path/to/llava"', repr(str(llava)))
                cwd = os.getcwd()
                os.chdir(tmp_path)
                try:
                    exec(compile(block, page, "exec"), ns)  # noqa: S102
                finally:
                    os.chdir(cwd)
                ran.append("python")
                continue
            for cmd in _commands(block):
                cmd = cmd.replace("path/to/Real-3DQA", str(real_dir / "real3dqa"))
                args = shlex.split(cmd)
                if "build-real3dqa" in args and not (tmp_path / "full.jsonl").exists():
                    _predictions(tmp_path)
                if "build-real-scanqa" in args:
                    _scanqa_predictions(tmp_path)
                for name in ("preds.jsonl", "corrected_preds.jsonl"):  # the release, corrected
                    if f"mymodel={name}" in args and not (tmp_path / name).exists():
                        _release_predictions(tmp_path, args[args.index("--dataset") + 1], name)
                if args[0] == "accelerate" and "--config_file" in args:
                    # GPU launches: the config must be a valid accelerate config
                    from accelerate.commands.config.config_args import load_config_from_file

                    cfg = load_config_from_file(str(ROOT / args[args.index("--config_file") + 1]))
                    script = next(a for a in args if a.endswith(".py"))
                    assert cfg.num_processes >= 1 and (ROOT / script).is_file()
                    assert yaml.safe_load((ROOT / args[args.index("--config") + 1]).read_text())
                    ran.append("accelerate-config")
                    continue
                if args[0] == "accelerate":
                    args = [str(BIN / "accelerate"), *args[1:]]
                    args = [str(ROOT / a) if a.startswith("recipes/") else a for a in args]
                    script = Path(next(a for a in args if a.endswith(".py"))).stem
                    small = {"--output_dir": f"out/{script}", "--max_steps": "2",
                             "--hidden_size": "32", "--num_layers": "1"}
                    # a flag the snippet gives is not given twice (refused: issue 63)
                    args += [x for k, v in small.items() if k not in args for x in (k, v)]
                if args[:2] == ["hf-real3d", "explore"]:  # a server: it must answer, then stop
                    serve_once(args, tmp_path, env)
                    if "--review" in args:  # a person's review, played by the library
                        from hf_real3d.real3dqa.review import ReviewFolder

                        rf = ReviewFolder.open(tmp_path / args[args.index("--review") + 1])
                        while (entry := rf.next_entry("reviewer")[0]) is not None:
                            rf.record("reviewer", entry, "accept")
                    ran.append("explore")
                    continue
                if "--push-to-hub" in args or "publish-metrics" in args:
                    # a real process: huggingface_hub reads HF_ENDPOINT when it is imported
                    p = subprocess.run(args, cwd=tmp_path, env=hub_env, capture_output=True,
                                       text=True, timeout=900)
                elif args[0] == "hf-real3d":
                    # in this process (the console script itself is tested in test_cli.py and
                    # test_install.py): a second or more saved per command
                    p = run_cli(*args[1:], cwd=tmp_path)
                else:
                    p = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True,
                                       text=True, timeout=900)
                assert p.returncode == 0, (cmd, p.stderr[-3000:])
                ran.append(args[1] if args[0] == "hf-real3d" else args[0])
        assert ("dataset", "org/real3dqa") in hub.state.repos
        assert ("space", "org/vrs") in hub.state.repos
    assert (tmp_path / "report/metrics.json").is_file()
    assert (tmp_path / "out/3drft/model.safetensors").is_file()
    assert (tmp_path / "srbench_report/report.md").is_file()
    n_python = sum(lang == "python" for lang, _, _ in _blocks())
    assert n_python >= 9 and ran.count("python") == n_python, ran  # every Python block ran
    assert ran.count("accelerate-config") == 4, ran
    assert (tmp_path / "report_checked/metrics.json").is_file()  # the README's release chain
    assert (tmp_path / "out/quick/model.safetensors").is_file()  # its Python quick start
    assert (tmp_path / "out/3drft_from_python/blind/model.safetensors").is_file()
    assert (tmp_path / "out/lora/adapter_model.safetensors").is_file()
    assert (tmp_path / "out/3drft_vlm/model.safetensors").is_file()
    assert (tmp_path / "scanqa_report/metrics.json").is_file()
    assert (tmp_path / "scanqa_tasks/hf_real3d_real_scanqa.yaml").is_file()
    assert "explore" in ran


def test_readme_demo_table_is_rendered_from_results_json():
    """The documentation's demo table is `report.demo_summary_table` of the measured results.json
    (its summary is kept in tests/data/demo_results.json)."""
    from helpers.doc_tables import demo_summary_table, summary_gains_table, summary_scanqa_table

    data = json.loads((ROOT / "tests/data/demo_results.json").read_text())
    text = documentation()
    block = text[text.index("<!-- demo-results -->"):text.index("<!-- /demo-results -->")]
    assert demo_summary_table(data) in block
    assert summary_gains_table(data) in block
    assert summary_scanqa_table(data) in block
    assert len(data["seeds"]) == 3 and set(data) == {"seeds", "mean", "std", "per_seed"}


def test_readme_srbench_study_table_is_rendered_from_results_json():
    """The documentation's 3DSRBench VLM table is `srbench.report.srbench_study_table` of the
    measured `hf-real3d demo --srbench_model --seeds 3` (its study records are kept in
    tests/data/srbench_study.json), and its findings are those the report computes."""
    from hf_real3d.demo.findings import srbench_study_findings
    from hf_real3d.srbench.report import srbench_study_summary, srbench_study_table

    seeds = json.loads((ROOT / "tests/data/srbench_study.json").read_text())
    text = documentation()
    block = text[text.index("<!-- srbench-study -->"):text.index("<!-- /srbench-study -->")]
    assert srbench_study_table(seeds) in block
    assert [s["seed"] for s in seeds] == [0, 1, 2]
    for statement, holds in srbench_study_findings(srbench_study_summary(seeds)):
        assert f"{statement} ({'holds' if holds else 'does NOT hold'})" in " ".join(
            block.split()), statement


def test_readme_stress_test_table_is_rendered_from_the_measured_runs():
    """The documentation's stress-test table is `summary_table` of the recorded runs on the real
    files (tests/data/stress_test_real.json; tests/test_debias.py re-measures the de-biased
    set's solvability against it), and its statements quote those records."""
    from hf_real3d.debias.run import summary_table

    d = json.loads((ROOT / "tests/data/stress_test_real.json").read_text())
    text = documentation()
    block = text[text.index("<!-- stress-test -->"):text.index("<!-- /stress-test -->")]
    assert summary_table({"SQA3D test split": d["sqa3d_test"],
                          "Real-3DQA de-biased set (the paper's)": d["real3dqa_debiased"],
                          "questions its filters removed": d["filtered_out"]}) in block
    deb = d["real3dqa_debiased"]
    flat = " ".join(block.split())
    assert f"answers {deb['solvability']['overall']:.1f}% of them" in flat
    assert f"majority answer ({deb['majority']:.1f}%)" in flat
    assert f"after {len(deb['rounds']) - 1} rounds with {deb['final']['kept']} of 1,485" in flat
    assert f"It removes {1485 - deb['final']['kept']} of the paper's kept" in flat
    for t in ("visibility", "navigation", "number", "spatial relation"):
        assert f"{t} {deb['solvability']['per_type'][t]['solvability']:.1f}%" in flat


def test_readme_lm_stress_test_quotes_its_record():
    """The documentation's language-model TsT figures are those recorded from the run
    (tests/data/stress_test_real_lm.json)."""
    d = json.loads((ROOT / "tests/data/stress_test_real_lm.json").read_text())
    text = documentation()
    flat = " ".join(text[text.index("<!-- stress-test -->"):
                         text.index("<!-- /stress-test -->")].split())
    s = d["solvability"]
    assert d["diagnostic"] == "lm" and d["n"] == 1485
    assert f"answers {s['overall']:.1f}% [{s['ci'][0]:.1f}, {s['ci'][1]:.1f}]" in flat
    assert f"(majority {d['majority']:.1f}%)" in flat
    for t in ("navigation", "number", "visibility", "spatial relation", "object"):
        assert f"{t} {s['per_type'][t]['solvability']:.1f}%" in flat, t


def test_readme_pruning_table_and_finding_come_from_the_record():
    """The documentation's bias-pruning table is `pruning_table` of the recorded per-seed pruning
    (tests/data/demo_pruning.json), and its figures are those `pruning_findings` computes."""
    from hf_real3d.demo.findings import pruning_findings, pruning_gaps
    from hf_real3d.demo.sections import pruning_table
    from hf_real3d.stats import seed_stats

    d = json.loads((ROOT / "tests/data/demo_pruning.json").read_text())
    text = documentation()
    block = text[text.index("<!-- demo-pruning -->"):text.index("<!-- /demo-pruning -->")]
    assert pruning_table(d["pruning"]) in block
    flat = " ".join(text.split())
    assert f"answers {seed_stats([p['solvability'] for p in d['pruning']]).text()}% of them" \
        in flat
    found = {f.key: f for f in pruning_findings(d["pruning"])}
    assert set(found) == {"f:blind", "f:sft_no3d"}
    for other in ("blind", "sft_no3d"):
        g = pruning_gaps(d["pruning"], "sft", other)
        quoted = (f"from {g['filtered'].text(sign=True)} to {g['pruned'].text(sign=True)} "
                  f"(growth {g['growth'].text(sign=True)}; per seed {g['growth'].per_seed()})")
        assert quoted in " ".join(block.split()), quoted
    # the study page says: against sft_no3d it holds (at the edge), against blind it does not
    assert found["f:sft_no3d"].holds and not found["f:blind"].holds


def test_readme_arms_table_and_goals_come_from_the_study():
    """The documentation's table of the reweighting arms is `arms_table` of the recorded
    `hf-real3d demo --arms all --seeds 3` (its summary is tests/data/demo_results.json, the
    per-seed diagnosis tests/data/demo_arms.json), and it states each arm's goal verdict as
    the report computes it."""
    from helpers.doc_tables import arms_table, summary_goal_findings

    from hf_real3d.demo.config import OPTIONAL_ARMS

    data = json.loads((ROOT / "tests/data/demo_results.json").read_text())
    record = json.loads((ROOT / "tests/data/demo_arms.json").read_text())
    assert [s["seed"] for s in record["seeds"]] == data["seeds"] == [0, 1, 2]
    assert set(OPTIONAL_ARMS) <= set(data["mean"])  # the study ran every arm
    text = documentation()
    block = text[text.index("<!-- demo-arms -->"):text.index("<!-- /demo-arms -->")]
    assert arms_table(data, record) in block
    goals = summary_goal_findings(data)
    assert len(goals) == 8  # every 3DR-FT arm against its control
    flat = " ".join(block.split())
    for line in goals:
        assert line in flat, line


def test_readme_rotation_arms_come_from_the_study():
    """The documentation's tables of the viewpoint-consistency arms are `rotation_table`,
    `transfer_table` and `viewpoint_weights_table` of the recorded `hf-real3d demo --arms all
    --seeds 3` (summary tests/data/demo_results.json, per-seed record
    tests/data/demo_rotation.json), and each arm's goal verdict is the one the report
    computes; the README states the goal with the same figures."""
    from hf_real3d.demo.config import ROTATION_ARMS
    from hf_real3d.demo.findings import rotation_findings, verdict
    from hf_real3d.demo.sections import (
        rotation_table,
        transfer_table,
        viewpoint_weights_table,
    )

    data = json.loads((ROOT / "tests/data/demo_results.json").read_text())
    record = json.loads((ROOT / "tests/data/demo_rotation.json").read_text())
    assert [s["seed"] for s in record["seeds"]] == data["seeds"] == [0, 1, 2]
    assert set(ROTATION_ARMS) <= set(data["mean"])
    text = documentation()
    block = text[text.index("<!-- demo-rotation -->"):text.index("<!-- /demo-rotation -->")]
    for table in (rotation_table(data, record), transfer_table(record),
                  viewpoint_weights_table(record)):
        assert table and table in block
    flat = " ".join(block.split())
    found = rotation_findings(data)
    assert len(found) == 4
    for f in found:
        assert f"({f.key}) {f.statement} ({verdict(f.holds, 3)})." in flat, f.key
    readme = " ".join((ROOT / "README.md").read_text().split())
    for f in found:
        assert f"`{f.key.split(':')[1]}`" in readme and verdict(f.holds, 3) in readme
