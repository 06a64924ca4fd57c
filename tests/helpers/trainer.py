"""Shared pieces of the trainer tests (not a test file): tiny VLM rows and arguments, a
LEO-like module with its route, and trl's SFT settings on a tiny Llama."""

import numpy as np
import torch
from datasets import Dataset
from PIL import Image

from helpers.tiny_vlm import _tokenizer
from hf_real3d.training import ModuleRoute, ReweightedConfig, ReweightedTrainer

PROMPTS = ["which is left", "is a on b", "what is in front", "is the a higher",
           "which is closer", "is b behind a"]


def vlm_rows(n=8, seed=0):
    rng = np.random.default_rng(seed)
    return [{"question_id": str(i),
             "images": [Image.fromarray(rng.integers(0, 255, (40, 40, 3), dtype=np.uint8))],
             "prompt": PROMPTS[i % len(PROMPTS)], "answer": ["yes", "no", "left", "a"][i % 4]}
            for i in range(n)]


def trainer_args(tmp_path, **kw):
    base = dict(output_dir=str(tmp_path / "out"), per_device_train_batch_size=4, max_steps=2,
                learning_rate=1e-2, logging_steps=1, save_strategy="no", report_to="none",
                use_cpu=True, seed=0, disable_tqdm=True, dataloader_num_workers=0)
    base.update(kw)
    return ReweightedConfig(**base)


class LeoLike(torch.nn.Module):
    """A causal LM + a point projector (no ``.config``): ``forward(data_dict)`` embeds the
    object features as prefix tokens, masks the prompt inside, and returns the per-sample
    answer loss, as LEO's and the official pseudocode's models do."""

    def __init__(self, seed=0):
        from transformers import LlamaConfig, LlamaForCausalLM

        super().__init__()
        torch.manual_seed(seed)
        self.llm = LlamaForCausalLM(LlamaConfig(
            vocab_size=40, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
            num_attention_heads=2, num_key_value_heads=2))
        self.projector = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.GELU(),
                                             torch.nn.Linear(16, 16))

    def token_logprobs(self, data):
        obj = self.projector(data["obj_feats"])  # (B, O, 16)
        emb = self.llm.get_input_embeddings()(data["input_ids"])
        logits = self.llm(inputs_embeds=torch.cat([obj, emb], 1)).logits[:, obj.size(1):]
        logp = torch.log_softmax(logits[:, :-1].float(), -1)
        tgt = data["input_ids"][:, 1:]
        mask = torch.arange(tgt.size(1))[None] >= data["prompt_len"][:, None] - 1
        return logp.gather(-1, tgt[..., None])[..., 0] * mask, mask

    def forward(self, data):
        logp, mask = self.token_logprobs(data)
        return {"loss": -(logp.sum(1)) / mask.sum(1)}  # per-sample answer loss


def leo_batch(seed=0):
    g = torch.Generator().manual_seed(seed)
    return {"input_ids": torch.randint(1, 40, (4, 9), generator=g),
            "obj_feats": torch.randn(4, 5, 6, generator=g),
            "prompt_len": torch.tensor([5, 6, 4, 7])}


def leo_text_only(data):
    return {**data, "obj_feats": torch.zeros_like(data["obj_feats"])}


def leo_tokens(model, batch, text_only):
    return model.token_logprobs(leo_text_only(batch) if text_only else batch)


class LeoBatches(torch.utils.data.Dataset):
    def __init__(self, n):
        self.items = [leo_batch(i) for i in range(n)]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def module_route_trains(mode, tmp_path):
    """Train a LEO-like module through a token-level ModuleRoute with a frozen blind LEO
    under ``mode``; the projector and the LM must change. Returns the trainer."""
    model, blind = LeoLike(0), LeoLike(1)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    tr = ReweightedTrainer(model=model, args=trainer_args(tmp_path, reweighting=mode, max_steps=3),
                           route=ModuleRoute(leo_tokens), ref_model=blind,
                           train_dataset=LeoBatches(3), data_collator=lambda x: x[0])
    tr.train()
    changed = {k.split(".")[0] for k in before if not torch.equal(before[k],
                                                                   model.state_dict()[k])}
    assert changed == {"llm", "projector"}
    return tr


WORDS = ["yes", "no", "left", "a", "right", "b"]


def sft_args(tmp_path, **kw):
    return dict(output_dir=str(tmp_path / "out"), max_steps=1, per_device_train_batch_size=4,
                report_to="none", use_cpu=True, logging_steps=1, save_strategy="no",
                max_length=None, learning_rate=0.1, lr_scheduler_type="constant", optim="sgd",
                seed=0, disable_tqdm=True, **kw)


def text_setup():
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = _tokenizer([])
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=16, intermediate_size=32,
                      num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                      pad_token_id=0, bos_token_id=2, eos_token_id=3)
    policy = LlamaForCausalLM(cfg)
    torch.manual_seed(1)
    blind = LlamaForCausalLM(cfg)
    rows = [{"prompt": "which is left of the a", "completion": f" {WORDS[i % 6]}"}
            for i in range(8)]
    return tok, policy, blind, Dataset.from_list(rows)
