"""Configs built in Python get the type checks that jsonargparse gives the command line."""

import pickle
from dataclasses import asdict

import numpy as np
import pytest
import yaml

from awrsr.data import DataConfig
from awrsr.errors import ConfigError, FieldValueError
from awrsr.eval import EvalConfig
from awrsr.models import ModelConfig
from awrsr.train import TrainConfig


@pytest.mark.parametrize("make, message", [
    # a string is truthy: "no" would have built per-head matrices
    (lambda: ModelConfig(refine="simp", refine_per_head="no"), "model.refine_per_head must be true or false, got 'no'"),
    (lambda: ModelConfig(max_len=20.0), "model.max_len must be an integer, got 20.0"),  # torch would fail deep inside
    (lambda: ModelConfig(num_blocks=True), "model.num_blocks must be an integer, got True"),
    (lambda: ModelConfig(refine_scale="Head"), "model.refine_scale must be one of 'head', 'length', got 'Head'"),
    (lambda: ModelConfig(refine_blocks=[0, 1.5]), r"model.refine_blocks must be a list of integers or null, got \[0, 1.5\]"),
    (lambda: ModelConfig(position_embedding="yes"), "model.position_embedding must be true or false or null, got 'yes'"),
    (lambda: TrainConfig(lr="1e-3"), "train.lr must be a finite number, got '1e-3'"),
    # NaN passes "weight_decay < 0" and failed inside torch's Adam; inf "diverged", blaming the lr
    (lambda: TrainConfig(weight_decay=float("nan")), "train.weight_decay must be a finite number, got nan"),
    (lambda: TrainConfig(lr=float("inf")), "train.lr must be a finite number, got inf"),
    # True is an int to Python, but no number a config means: it would train at lr 1.0
    (lambda: TrainConfig(lr=True), "train.lr must be a finite number, got True"),
    (lambda: ModelConfig(refine="simp", refine_init_std=False), "model.refine_init_std must be a finite number, got False"),
    (lambda: ModelConfig(refine="simp", refine_init_std=np.float64("-inf")), "model.refine_init_std must be a finite number, got -inf"),
    (lambda: EvalConfig(ks=10), "evaluation.ks must be a list of integers, got 10"),
    (lambda: EvalConfig(filter_seen="false"), "evaluation.filter_seen must be true or false, got 'false'"),
    (lambda: DataConfig(path=3), "data.path must be a string or null, got 3"),
])
def test_a_wrong_type_is_a_config_error_naming_the_field(make, message):
    with pytest.raises(FieldValueError, match=f"^{message}$") as caught:
        make()
    assert caught.value.field == message.split()[0]  # what tune reads, not the message


def test_numpy_scalars_and_integers_for_floats_are_taken_as_python_values():
    model = ModelConfig(max_len=np.int64(30), dropout=0)
    assert type(model.max_len) is int and model.max_len == 30 and type(model.dropout) is float
    assert TrainConfig(lr=1).lr == 1.0 and EvalConfig(ks=(5, np.int32(1))).ks == [1, 5]
    assert type(DataConfig(synthetic={"num_users": np.int32(9)}).synthetic.num_users) is int
    assert type(DataConfig(min_user_interactions=np.int64(3)).min_user_interactions) is int  # before its range check
    # a grid from np.logspace, a value from a frame's row: written to config.yaml as plain YAML
    train = TrainConfig(lr=np.float64(1e-3), group_by_length=np.True_)
    model = ModelConfig(refine=np.str_("simp"), refine_blocks=[np.int64(1)])
    assert (type(train.lr), type(train.group_by_length), type(model.refine), type(model.refine_blocks[0])) == (
        float, bool, str, int)
    yaml.safe_dump({"train": asdict(train), "model": asdict(model)})  # numpy scalars would fail here


@pytest.mark.parametrize("make, message", [
    (lambda: TrainConfig(patience=-1), r"train.patience must be >= 0, got -1"),
    (lambda: TrainConfig(lr=0.0), r"train.lr must be > 0, got 0.0"),  # Adam at lr 0 trains nothing
    (lambda: TrainConfig(pvn_weight=-0.5), r"train.pvn_weight must be >= 0, got -0.5"),
    (lambda: TrainConfig(weight_decay=-1e-4), r"train.weight_decay must be >= 0, got -0.0001"),
    (lambda: TrainConfig(adversarial_alpha=-0.1), r"train.adversarial_alpha must be >= 0, got -0.1"),
    (lambda: TrainConfig(num_negatives=0), r"train.num_negatives must be >= 1, got 0"),
    (lambda: TrainConfig(batch_size=0), r"train.batch_size must be >= 1, got 0"),
    (lambda: TrainConfig(max_epochs=0), r"train.max_epochs must be >= 1, got 0"),
    (lambda: TrainConfig(val_every=0), r"train.val_every must be >= 1, got 0"),
    (lambda: TrainConfig(max_time="01:30:00"), r"train.max_time must look like DD:HH:MM:SS"),  # three fields, all digits
    (lambda: TrainConfig(max_time="00:00:00:00"), r"train.max_time must be longer than zero, got '00:00:00:00'"),
    (lambda: EvalConfig(ks=[]), r"evaluation.ks must be a non-empty list of integers >= 1, got \[\]"),
    (lambda: EvalConfig(ks=[0, 10]), r"evaluation.ks must be a non-empty list of integers >= 1, got \[0, 10\]"),
    (lambda: EvalConfig(batch_size=0), r"evaluation.batch_size must be >= 1, got 0"),
])
def test_a_value_out_of_range_is_a_config_error_naming_the_field(make, message):
    with pytest.raises(FieldValueError, match=f"^{message}") as caught:
        make()
    assert caught.value.field == message.split()[0]


@pytest.mark.parametrize("make, message", [
    (lambda: TrainConfig(max_epochs=3, val_every=4), r"train.val_every \(4\) > train.max_epochs \(3\): no epoch would be validated"),
    (lambda: ModelConfig(hidden_size=8, num_heads=3), r"model.hidden_size \(8\) must be divisible by model.num_heads \(3\)"),
    (lambda: ModelConfig(num_blocks=2, refine="simp", refine_blocks=[2]), r"model.refine_blocks \[2\] out of range: blocks are 0..1"),
    (lambda: DataConfig(synthetic={"min_length": 10, "max_length": 5}),
     r"data.synthetic.max_length \(5\) must be >= data.synthetic.min_length \(10\)"),
])
def test_a_combination_of_fields_is_no_one_fields_error(make, message):
    # another value of the first field may fit: tune judges these per trial, not once for the grid
    with pytest.raises(ConfigError, match=f"^{message}") as caught:
        make()
    assert not isinstance(caught.value, FieldValueError)


def test_a_field_error_survives_pickling_whole():
    err = pickle.loads(pickle.dumps(FieldValueError("train.lr", "must be > 0, got 0.0")))
    assert (type(err), err.field, str(err)) == (FieldValueError, "train.lr", "train.lr must be > 0, got 0.0")


def test_the_edges_of_each_range_are_accepted():
    """The bounds are inclusive where a value there still means something: no patience (stop at the
    first validation without improvement), validating only the last epoch, seed 2**32 - 1,
    a single negative, HR@1; ks are kept sorted and once each."""
    train = TrainConfig(patience=0, max_epochs=3, val_every=3, seed=2**32 - 1, num_negatives=1, pvn_weight=0.0,
                        weight_decay=0.0, adversarial_alpha=0.0, max_time="00:00:30:00")
    assert (train.patience, train.val_every, train.effective_num_negatives) == (0, 3, 1)
    assert EvalConfig(ks=[10, 1, 10], batch_size=1).ks == [1, 10]


def test_a_loss_without_a_default_number_of_negatives_gets_one(monkeypatch):
    """A plugin's loss is in no table of defaults: one negative, unless train.num_negatives says
    (a KeyError traceback from deep inside fit before)."""
    from awrsr.train import config

    monkeypatch.setattr(config, "DEFAULT_NEGATIVES", {"ce": 0})
    assert config.TrainConfig(loss="sampled_softmax").effective_num_negatives == 1
    assert config.TrainConfig(loss="sampled_softmax", num_negatives=7).effective_num_negatives == 7
