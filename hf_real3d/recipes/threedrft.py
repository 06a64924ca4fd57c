"""3D-reweighted fine-tuning (3DR-FT) of SceneLM on a built dataset.

    hf-real3d synth --out data/synth
    hf-real3d train 3drft --config recipes/configs/3drft_synth.yaml
    accelerate launch recipes/3drft.py --config recipes/configs/3drft_synth.yaml
    accelerate launch --config_file recipes/accelerate/cpu_2proc.yaml recipes/3drft.py \
        --config recipes/configs/3drft_synth.yaml --reweighting official

``reweighting: paper`` (and the other modes that read the blind reference) runs in two named
stages: (1) the blind model named by ``blind_model_path``, reused only if it was trained
with this run's architecture, data and settings (else an error; ``check_blind_model:
false`` uses it as it is), or trained into ``<output_dir>/blind`` by the blind_ft recipe's
``main`` when the config names none (a stale one there is retrained, and the log says why);
(2) 3DR-FT with its log-probs. ``main`` is what the demo and the tests train with.
"""

import dataclasses
from pathlib import Path

from hf_real3d.modeling import collator_for
from hf_real3d.recipes import blind_ft
from hf_real3d.synth import ensure_benchmark
from hf_real3d.training import ReweightedTrainer, mode, set_seed
from hf_real3d.training.args import (
    DEFAULT_DATASET,
    make_parser,
    parse_recipe_args,
)
from hf_real3d.training.inputs import check_recipe_inputs
from hf_real3d.training.recipe import (
    announce,
    blind_stage,
    build_model,
    load_training_data,
    reference_data,
    save_trained,
)

# without arguments: the settings the README measured
CONFIG = Path(__file__).resolve().parent / "configs" / "3drft_synth.yaml"
# its model reads the scene (stage 1 trains the blind one)
FIXED = {"blind": (False, "the blind_ft recipe (hf-real3d train blind_ft)")}

__all__ = ["main", "make_parser", "parse"]


def parse(argv=None):
    """Arguments: the YAML config's settings, then ``--config`` and flags over them."""
    return parse_recipe_args(argv, CONFIG, fixed=FIXED, recipe="the 3drft recipe")


def main(script_args, training_args, *, data=None):
    """Train (both stages) and save; ``data``: the training data of ``script_args``, when
    already loaded (the demo loads a seed's once)."""
    # what it reads and writes, checked before any data is read
    check_recipe_inputs(script_args, training_args)
    # data: the questions and scenes of a built dataset (the default is built when absent)
    if data is None:
        with training_args.main_process_first(desc="dataset"):
            if script_args.dataset_name == DEFAULT_DATASET:
                ensure_benchmark(DEFAULT_DATASET)
            data = load_training_data(script_args)
    # stage 1: the blind reference, for the modes that read one: reused when it was trained
    # with this run's architecture, data and settings, else trained by blind_ft's main
    stage = None
    if mode(training_args.reweighting).needs_blind:
        blind = blind_stage(script_args, training_args, data)
        if blind.train:
            blind_ft.main(blind.script_args, blind.training_args, data=data)
        script_args = dataclasses.replace(script_args,
                                          blind_model_path=blind.training_args.output_dir)
        stage = "stage 2/2 3DR-FT"
    # model
    set_seed(training_args.seed)
    model = build_model(script_args, data.tokenizer, blind=False)
    collator = collator_for(model, data.tokenizer, data.bank, max_length=script_args.max_length)
    # the blind reference's log-probs: precomputed into a column, or a live frozen model
    train_ds, eval_ds, ref_model, blind_info = reference_data(script_args, training_args, data,
                                                              collator)
    # trainer: the 3DR-FT loss of the mode asked for
    announce(stage or Path(training_args.output_dir).name, training_args, data, len(train_ds),
             blind=False)
    trainer = ReweightedTrainer(model=model, args=training_args, ref_model=ref_model,
                                train_dataset=train_ds, eval_dataset=eval_ds,
                                data_collator=collator, processing_class=data.tokenizer)
    # train
    result = trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint)
    # save: the model, its tokenizer, the training signature and the model card
    save_trained(trainer, result, script_args, training_args, data, blind=False,
                 blind_info=blind_info)
    return trainer
