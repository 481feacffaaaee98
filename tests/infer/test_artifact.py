"""The weights file: the same model gives the same bytes."""

import hashlib
import json
import struct
from dataclasses import asdict

import torch

from awrsr.data import Vocabulary
from awrsr.infer.artifact import WEIGHTS_FILE, load_artifact, save_artifact
from awrsr.models import ModelConfig, build_model


def test_saving_one_model_again_writes_the_same_bytes(tmp_path):
    # safetensors writes its two metadata keys in a random order per save: half the files differed
    torch.manual_seed(0)
    config = ModelConfig(max_len=6, hidden_size=8, num_blocks=1)
    model = build_model(config, num_items=5)
    vocab = Vocabulary([10, 11, 12, 13, 14])
    run = {"model": asdict(config)}
    files = [save_artifact(tmp_path / f"a{i}", config=run, vocab=vocab, model=model) / WEIGHTS_FILE for i in range(8)]
    digests = {hashlib.sha256(f.read_bytes()).hexdigest() for f in files}
    assert len(digests) == 1
    data = files[0].read_bytes()
    (size,) = struct.unpack("<Q", data[:8])
    assert size % 8 == 0  # the tensors start 8-byte aligned
    header = json.loads(data[8 : 8 + size])
    assert list(header["__metadata__"]) == sorted(header["__metadata__"])
    loaded = load_artifact(files[0].parent).model.state_dict()
    assert all(torch.equal(loaded[name], tensor) for name, tensor in model.state_dict().items())
