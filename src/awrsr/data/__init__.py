"""Data room: read interactions, clean them, index them, split them leave-one-out.

>>> from awrsr.data import DataConfig, load_sequence_data, leave_one_out
>>> split = leave_one_out(load_sequence_data(DataConfig()))  # the built-in synthetic data
>>> split.num_items > 0
True
"""

from awrsr.data.config import DataConfig, SyntheticConfig, data_config_from_dict
from awrsr.data.dataset import DatasetStats, Fingerprint, SequenceData, load_sequence_data
from awrsr.data.readers import read_interactions
from awrsr.data.report import print_stats
from awrsr.data.sequences import EvalCases, LeaveOneOutSplit, Sequences
from awrsr.data.split import leave_one_out
from awrsr.data.synthetic import make_synthetic_interactions
from awrsr.data.vocab import Vocabulary

__all__ = [
    "DataConfig",
    "DatasetStats",
    "EvalCases",
    "Fingerprint",
    "LeaveOneOutSplit",
    "SequenceData",
    "Sequences",
    "SyntheticConfig",
    "data_config_from_dict",
    "Vocabulary",
    "leave_one_out",
    "load_sequence_data",
    "make_synthetic_interactions",
    "print_stats",
    "read_interactions",
]
