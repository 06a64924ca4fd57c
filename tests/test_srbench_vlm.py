"""The small VLM trained on synthetic 3DSRBench renders: training items, a few training
steps, and its answers through `evaluate-3dsrbench --model` unchanged."""

import json

import numpy as np
import pytest

from hf_real3d.demo.srbench_vlm import (
    MIXES,
    SRBenchVLMConfig,
    blank_image,
    train_srbench_vlm,
    training_items,
)


@pytest.fixture(scope="module")
def renders():
    from hf_real3d.synth.srbench_gen import SRBenchConfig, generate_srbench

    train = generate_srbench(SRBenchConfig(seed=7, scenes=1, views_per_scene=1,
                                           questions_per_scene=8), progress=False)
    test = generate_srbench(SRBenchConfig(seed=8, scenes=1, views_per_scene=1,
                                          questions_per_scene=6), progress=False)
    return train, test


def test_training_items_common_and_mixed(renders):
    train, _ = renders
    common, uncommon = train["synthetic_common"], train["synthetic_uncommon"]
    a = training_items(common, uncommon, "common", image_size=32)
    b = training_items(common, uncommon, "mixed", seed=0, image_size=32)
    # every circular order and the mirrored image: the same count for both mixes
    assert len(a) == len(b) > 2 * len(common)
    assert {r["qid"] for r in a} == {r["qid"] for r in b}
    assert all(r["answer"] in "ABCD" and r["images"][0].size == (32, 32) for r in a)
    assert all("Answer with the option's letter" in r["prompt"] for r in a)
    # mixed draws some items from the uncommon camera (other pixels for the same question)
    differs = [not np.array_equal(np.asarray(x["images"][0]), np.asarray(y["images"][0]))
               for x, y in zip(a, b)]
    assert 0 < sum(differs) < len(differs)
    with pytest.raises(ValueError, match="one of"):
        training_items(common, uncommon, "uncommon")
    assert set(MIXES) == {"common", "mixed"}


@pytest.mark.slow
def test_trained_vlm_answers_through_evaluate_3dsrbench(renders, tmp_path):
    from hf_real3d.cli import main
    from hf_real3d.srbench import build_srbench, load_rows
    from hf_real3d.srbench.evaluate import model_predictions, score_rows

    train, test = renders
    items = training_items(train["synthetic_common"], train["synthetic_uncommon"], "common",
                           image_size=32)
    model = train_srbench_vlm(items, tmp_path / "vlm",
                              SRBenchVLMConfig(max_steps=4, batch_size=8, hidden=32, layers=1,
                                               image_size=32))
    assert (model / "config.json").is_file() and (model / "chat_template.jinja").is_file() \
        or (model / "processor_config.json").is_file()
    folder = tmp_path / "srb"
    build_srbench(folder, synthetic=test)
    out = tmp_path / "report"
    assert main(["evaluate-3dsrbench", "--dataset", str(folder), "--model", f"vlm={model}",
                 "--text_only", "none", "--out", str(out)]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    rows = load_rows(folder, "synthetic_uncommon")
    # the command's figures are the model's own answers, scored unchanged
    direct = score_rows(rows, model_predictions(rows, str(model), progress=False))
    assert metrics["synthetic_uncommon"]["vlm"] == json.loads(json.dumps(direct))
    assert metrics["synthetic_uncommon"]["vlm"]["n"] == len(rows)
    # the blank-image control goes through the same model
    blank = [{**r, "image": blank_image(64)} for r in rows]
    assert len(model_predictions(blank, str(model), progress=False)) == len(rows)
