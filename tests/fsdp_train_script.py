"""3DR-FT ('paper', frozen blind reference) of a tiny Llama with policy and reference both
sharded by FSDP2 (``fully_shard``) over gloo, through the library's route and loss core.

accelerate 1.15 runs FSDP only on accelerators (on CPU its state falls back to MULTI_CPU /
DDP), so this script shards by hand what accelerate's FSDP2 plugin shards on GPUs. Run by
tests/test_trainer_distributed.py with ``torchrun --nproc_per_node N``; writes the losses and the
reference's checks (rank 0).
"""

import json
import sys

import torch
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard
from transformers import LlamaConfig, LlamaForCausalLM

from hf_real3d.training import HFModelRoute, paper_loss_from_logprobs
from hf_real3d.training.routes import align_scores


def _model(seed):
    torch.manual_seed(seed)
    return LlamaForCausalLM(LlamaConfig(vocab_size=40, hidden_size=16, intermediate_size=32,
                                        num_hidden_layers=2, num_attention_heads=2,
                                        num_key_value_heads=2))


def _full(p):
    return p.full_tensor() if hasattr(p, "full_tensor") else p


def _shard(model):
    for layer in model.model.layers:
        fully_shard(layer)
    fully_shard(model)
    return model


def _batch(step):
    g = torch.Generator().manual_seed(step)
    ids = torch.randint(4, 40, (4, 10), generator=g)
    labels = ids.clone()
    labels[:, :6] = -100
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}


def main(out: str) -> None:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    policy, ref = _shard(_model(0)), _model(1)
    ref.eval().requires_grad_(False)
    ref = _shard(ref)
    ref_before = [_full(p).clone() for p in ref.parameters()]
    opt = torch.optim.SGD(policy.parameters(), lr=0.1)
    route = HFModelRoute("drop")
    losses = []
    for step in range(3):
        full_batch = _batch(step)
        n_tokens = full_batch["labels"][:, 1:].ne(-100).sum()  # the global count
        part = {k: v.chunk(world)[rank] for k, v in full_batch.items()}
        full = route(policy, part)
        with torch.no_grad():
            text = route(policy, part, text_only=True)
            blind = route(ref, part, text_only=True)
        loss, _ = paper_loss_from_logprobs(
            full.logp, full.mask, align_scores(blind.logp, blind.mask, full.mask, what="ref"),
            align_scores(text.logp, text.mask, full.mask, what="text"), n_tokens, clip=10.0)
        (loss * world).backward()  # FSDP averages the gradients over ranks
        opt.step()
        opt.zero_grad()
        total = loss.detach().clone()
        dist.all_reduce(total)
        losses.append(float(total))
    ref_same = all(torch.equal(a, _full(p)) for a, p in zip(ref_before, ref.parameters()))
    sharded = [type(m).__name__ for m in (policy, ref)]
    if rank == 0:
        with open(out, "w") as f:
            json.dump({"losses": losses, "world_size": world, "sharded": sharded,
                       "ref_unchanged": ref_same,
                       "ref_grads": any(p.grad is not None for p in ref.parameters())}, f)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
