"""Supervised fine-tuning of SceneLM (full model: text + 3D) on a built dataset.

    hf-real3d synth --out data/synth
    hf-real3d train sft --config recipes/configs/sft_synth.yaml
    accelerate launch --config_file recipes/accelerate/cpu_2proc.yaml recipes/sft.py \
        --config recipes/configs/sft_synth.yaml [--dataset_name org/real3dqa-train ...]

Flags override the YAML file; every field of ScriptArguments and ReweightedConfig is a flag.
This recipe trains without reweighting (``reweighting: none``): any other ``reweighting``
is an error pointing to the 3drft recipe. ``main`` is what the demo and the tests train
with.
"""

from pathlib import Path

from hf_real3d.modeling import collator_for
from hf_real3d.synth import ensure_benchmark
from hf_real3d.training import ReweightedTrainer, set_seed
from hf_real3d.training.args import (
    DEFAULT_DATASET,
    make_parser,
    parse_recipe_args,
)
from hf_real3d.training.inputs import check_recipe_inputs
from hf_real3d.training.recipe import (
    announce,
    build_model,
    load_training_data,
    save_trained,
)

__all__ = ["main", "make_parser", "parse"]

# without arguments: the settings the README measured
CONFIG = Path(__file__).resolve().parent / "configs" / "sft_synth.yaml"
# what this recipe stands for -> (its value, the recipe that takes another)
FIXED = {"reweighting": ("none", "the 3drft recipe (hf-real3d train 3drft)"),
         "blind": (False, "the blind_ft recipe (hf-real3d train blind_ft)")}


def parse(argv=None):
    """Arguments: the YAML config's settings, then ``--config`` and flags over them."""
    return parse_recipe_args(argv, CONFIG, fixed=FIXED, recipe="the sft recipe")


def main(script_args, training_args, *, data=None):
    """Train and save; ``data``: the training data of ``script_args``, when already loaded
    (the demo loads a seed's once)."""
    # what it reads and writes, checked before any data is read
    check_recipe_inputs(script_args, training_args)
    # data: the questions and scenes of a built dataset (the default is built when absent)
    if data is None:
        with training_args.main_process_first(desc="dataset"):
            if script_args.dataset_name == DEFAULT_DATASET:
                ensure_benchmark(DEFAULT_DATASET)
            data = load_training_data(script_args)
    # model: SceneLM from config, a saved one, or around a local causal LM
    set_seed(training_args.seed)
    model = build_model(script_args, data.tokenizer, blind=False)
    collator = collator_for(model, data.tokenizer, data.bank, max_length=script_args.max_length)
    # trainer
    announce(Path(training_args.output_dir).name, training_args, data, len(data.train),
             blind=False)
    trainer = ReweightedTrainer(model=model, args=training_args, train_dataset=data.train,
                                eval_dataset=data.eval, data_collator=collator,
                                processing_class=data.tokenizer)
    # train
    result = trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint)
    # save: the model, its tokenizer, the training signature and the model card
    save_trained(trainer, result, script_args, training_args, data, blind=False)
    return trainer
