"""What a new user reads first (issue 39): the package's namespace, the training config's
help, the evaluate report's legend and notes, the model card."""

import dataclasses
import json

import hf_real3d


def test_package_namespace_is_its_public_names():
    import types

    # submodules some other code imported are attributes of any package; the rest is ours
    own = [n for n in dir(hf_real3d) if not n.startswith("_")
           and not isinstance(getattr(hf_real3d, n), types.ModuleType)]
    assert own == ["METRICS", "metric_path"]


def test_reweighted_config_help_explains_its_fields_first():
    from hf_real3d.training import ReweightedConfig, ReweightingArguments

    doc = ReweightedConfig.__doc__
    for f in dataclasses.fields(ReweightingArguments):
        assert f"    {f.name} (default " in doc, f.name
    # before TrainingArguments' own text in help()
    import pydoc

    text = pydoc.render_doc(ReweightedConfig, renderer=pydoc.plaintext)
    assert text.index("excess_ratio (default") < text.index("Method resolution order")


def test_evaluate_report_has_a_legend_and_says_what_orig_holds(real_dir, tmp_path):
    from hf_real3d.real3dqa.evaluate import evaluate_files, load_references

    refs = load_references(real_dir / "real3dqa")
    preds = tmp_path / "p.jsonl"
    preds.write_text("\n".join(json.dumps({"question_id": int(q), "rotation_deg": int(d),
                                           "prediction": a[0]})
                               for q, d, a in zip(refs.question_id, refs.rotation_deg,
                                                  refs.answers)))
    evaluate_files(real_dir / "real3dqa", [f"m={preds}"], tmp_path / "ev")
    report = (tmp_path / "ev/report.md").read_text()
    assert "Legend: **EM**" in report and "**VRS** = the mean of P_k" in report
    assert "EM (orig) is over all 1503 questions at 0 degrees: the 1485 of the de-biased set " \
           "and 18 that only the rotation groups hold" in report
