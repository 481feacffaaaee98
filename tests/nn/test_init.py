"""The initialisation every backbone starts from (``xavier_init_``)."""

import math

import torch
from torch import nn

from awrsr.nn.init import xavier_init_


def test_xavier_normal_weights_zero_biases_and_a_zero_padding_row():
    torch.manual_seed(0)
    model = nn.ModuleDict({
        "linear": nn.Linear(300, 200), "item": nn.Embedding(1001, 64, padding_idx=0), "positions": nn.Embedding(500, 64),
    })
    for parameter in model.parameters():  # start far from what xavier_init_ must set
        nn.init.constant_(parameter, 3.0)
    xavier_init_(model)
    assert torch.equal(model["linear"].bias, torch.zeros(200))
    assert torch.equal(model["item"].weight[0], torch.zeros(64))  # padding embeds to zeros
    for name, fan_in, fan_out in [("linear", 300, 200), ("item", 64, 1001), ("positions", 64, 500)]:
        weight = model[name].weight[1:] if name == "item" else model[name].weight
        # Xavier-normal std sqrt(2 / (fan_in + fan_out)); torch's fan_in of an (I, d) embedding is d
        assert abs(weight.std().item() / math.sqrt(2 / (fan_in + fan_out)) - 1) < 0.03, name
        assert abs(weight.mean().item()) < 0.01, name
