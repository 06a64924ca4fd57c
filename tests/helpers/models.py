"""The tiny SceneLM the trainer tests train."""

# the plain SceneLM the trainer tests use: object tokens from points and boxes only (not the
# question reader of SceneModelArguments' defaults), so their batches need no label inputs
PLAIN_3D = dict(object_labels=False, direction_words=False, color_words=False,
                question_reader=False, object_tokens=True)


def tiny_model(tokenizer, blind=False, seed=0):
    import torch
    from transformers import LlamaConfig

    from hf_real3d.modeling import SceneLM, SceneLMConfig

    torch.manual_seed(seed)
    text = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                       num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                       max_position_embeddings=128, tie_word_embeddings=True)
    return SceneLM(SceneLMConfig(text_config=text, max_objects=8, points_per_object=4,
                                 encoder_hidden=16, blind=blind, **PLAIN_3D))
