"""SceneLM's question reader and the 3D inputs it reads: question mask, colour words,
pooling on the object the question names, save/load, blind and ablation behaviour."""

import numpy as np
import pytest
import torch
from transformers import LlamaConfig

from hf_real3d.modeling import (
    SceneInputs,
    SceneLM,
    SceneLMConfig,
    SceneQACollator,
    collator_for,
)
from hf_real3d.modeling.data import color_name
from hf_real3d.synth.catalog import COLORS

READER_INPUTS = dict(object_labels=True, direction_words=True, color_words=True)


def _reader_model(tok, object_tokens=False, seed=0):
    text = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                       num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                       max_position_embeddings=128, tie_word_embeddings=True,
                       bos_token_id=tok.bos_token_id)
    torch.manual_seed(seed)
    return SceneLM(SceneLMConfig(text_config=text, max_objects=8, points_per_object=4,
                                 encoder_hidden=16, question_reader=True,
                                 object_tokens=object_tokens, **READER_INPUTS))


@pytest.fixture()
def data(tiny_training):
    tiny_training["bank"].tokenize_labels(tiny_training["tokenizer"])
    return tiny_training


@pytest.mark.parametrize("for_generation", [False, True])
def test_question_mask_covers_the_question(data, for_generation):
    tok, bank, rows = data["tokenizer"], data["bank"], data["rows"][:6]
    batch = SceneQACollator(tok, bank, inputs=SceneInputs(question_mask=True),
                            for_generation=for_generation)(rows)
    qm = batch["question_mask"]
    assert qm.shape == batch["input_ids"].shape
    for i, r in enumerate(rows):
        got = tok.decode(batch["input_ids"][i][qm[i].bool()])
        assert got.split() == tok.decode(tok(r["question"])["input_ids"]).split()
    none = SceneQACollator(tok, bank, inputs=SceneInputs(question_mask=True),
                           ablation="no_question")(rows)
    assert none["question_mask"].sum() == 0


def test_color_name_is_the_nearest_named_colour():
    rng = np.random.default_rng(0)
    for name, rgb in COLORS.items():
        pts = np.clip(np.asarray(rgb) / 255 + rng.normal(0, 0.02, (16, 3)), 0, 1)
        assert color_name(pts) == name


def test_colour_words_follow_the_points(data):
    tok, bank, rows = data["tokenizer"], data["bank"], data["rows"][:4]
    batch = SceneQACollator(tok, bank, inputs=SceneInputs(color_words=True))(rows)
    cols, mask = batch["object_colors"], batch["object_mask"].bool()
    assert (cols[~mask] == -1).all()
    for i, r in enumerate(rows):
        names = bank.colors[r["scene_id"]]
        for k, name in enumerate(names):
            want = tok.convert_tokens_to_ids(name)
            assert int(cols[i, k]) == (want if want != tok.unk_token_id else -1)


def test_reader_pools_the_object_the_question_names(data):
    """At initialisation head 0 already attends to the object whose label the question
    names (word embeddings shared with the language model), when its label is unique."""
    tok, bank, rows = data["tokenizer"], data["bank"], data["rows"]
    model = _reader_model(tok).eval()
    checked = 0
    for r in rows:
        names = bank.names[r["scene_id"]]
        q = r["question"].lower()
        named = [k for k, n in enumerate(names) if f"the {n} " in q or f"the {n}?" in q]
        if len(named) != 1 or names.count(names[named[0]]) != 1:
            continue
        for other in names:  # no other label may be named in the question
            if other != names[named[0]] and other in q:
                break
        else:
            batch = collator_for(model, tok, bank)([r])
            tokens, att = model.reader(
                model.encode_scene(batch["object_points"], batch["object_boxes"],
                                   batch["object_labels"], batch["object_directions"],
                                   batch["object_colors"]),
                batch["object_mask"], model.get_input_embeddings(),
                model.get_input_embeddings()(batch["input_ids"]),
                batch["question_mask"], batch["object_labels"], batch["object_directions"],
                batch["object_boxes"][..., :2].norm(dim=-1), return_weights=True)
            assert int(att[0, :, 0].argmax()) == named[0], (r["question"], names)
            assert tokens.shape == (1, model.config.reader_heads + 1,
                                    model.config.text_config.hidden_size)
            checked += 1
    assert checked >= 3


def test_reader_trains_and_survives_save_and_load(data, tmp_path):
    tok, bank, rows = data["tokenizer"], data["bank"], data["rows"][:8]
    model = _reader_model(tok)
    batch = collator_for(model, tok, bank)(rows)
    out = model(**batch)
    assert out.n_prefix == model.config.reader_heads + 1  # reader tokens only
    out.loss.backward()
    assert model.reader.mix.grad is not None and model.reader.mix.grad.abs().sum() > 0
    with torch.no_grad():
        model.reader.mix.add_(0.5)  # as training moves it
        model.reader.count_bias.sub_(1.0)
    model.save_pretrained(tmp_path / "m")
    again = SceneLM.from_pretrained(tmp_path / "m")
    for k, v in model.state_dict().items():
        assert torch.equal(v, again.state_dict()[k]), k
    with torch.no_grad():
        a, b = model.eval()(**batch).logits, again.eval()(**batch).logits
        assert (a - b).abs().max() < 1e-4, float((a - b).abs().max())


def test_reader_inputs_matter_and_are_checked(data):
    tok, bank, rows = data["tokenizer"], data["bank"], data["rows"][:6]
    model = _reader_model(tok, object_tokens=True).eval()
    batch = collator_for(model, tok, bank)(rows)
    with torch.no_grad():
        out = model(**batch)
        assert out.n_prefix == model.config.reader_heads + 1 + 8  # reader + object tokens
        other = dict(batch, object_labels=batch["object_labels"].flip(1))  # labels moved
        assert not torch.allclose(out.logits, model(**other).logits)
        blind = model(**batch, blind=True)  # drop: no prefix at all
        assert blind.n_prefix == 0
        model.config.blind_mode = "zeroed"
        assert model(**batch, blind=True).n_prefix == out.n_prefix  # same layout, empty
    with pytest.raises(ValueError, match="question_mask"):
        model(**{k: v for k, v in batch.items() if k != "question_mask"})
    with pytest.raises(ValueError, match="needs object_labels"):
        SceneLMConfig(question_reader=True, object_labels=False)
    with pytest.raises(ValueError, match="no 3D input"):
        SceneLMConfig(object_tokens=False, question_reader=False)


def test_unknown_direction_word_gets_no_embedding(data):
    from hf_real3d.modeling import train_tokenizer

    tok = train_tokenizer(["what is on my left ?", "in front of me", "on my right"])
    batch = SceneQACollator(tok, data["bank"],
                            inputs=SceneInputs(direction_words=True))(data["rows"][:4])
    dirs = batch["object_directions"]
    assert tok.convert_tokens_to_ids("behind") == tok.unk_token_id
    assert (dirs != tok.unk_token_id).all()
    assert set(dirs.flatten().tolist()) <= {-1} | {tok.convert_tokens_to_ids(w)
                                               for w in ("front", "right", "left")}


def test_untokenized_bank_is_an_error(data):
    import dataclasses

    bank = dataclasses.replace(data["bank"], label_ids={}, color_ids={})
    for kw, what in (({"object_labels": True}, "label"), ({"color_words": True}, "colour")):
        with pytest.raises(ValueError, match=f"has no {what} ids; call bank.tokenize_labels"):
            SceneQACollator(data["tokenizer"], bank, inputs=SceneInputs(**kw))(data["rows"][:2])
