"""Evaluation protocol switches (printed and stored with every result)."""


from dataclasses import dataclass, field

from awrsr.config_types import check_field_types
from awrsr.errors import FieldValueError


@dataclass
class EvalConfig:
    """The evaluation protocol's switches (printed and stored with every result).

    Args:
        ks: cut-offs k of HR@k and NDCG@k.
        filter_seen: score already-seen items -inf (the target itself is never filtered).
        batch_size: users per evaluation batch; on the CPU keep it times the items under about 4M (e.g. 32 at
            100k items): larger score matrices are fresh memory each batch, and page faults slow them.
    """

    ks: list[int] = field(default_factory=lambda: [1, 5, 10, 20])
    filter_seen: bool = True  # score already-seen items -inf (the target itself is never filtered)
    batch_size: int = 256  # users per evaluation batch

    def __post_init__(self) -> None:
        check_field_types(self, "evaluation")
        if not self.ks or any(k < 1 for k in self.ks):
            raise FieldValueError("evaluation.ks", f"must be a non-empty list of integers >= 1, got {self.ks}")
        self.ks = sorted(set(self.ks))
        if self.batch_size < 1:
            raise FieldValueError("evaluation.batch_size", f"must be >= 1, got {self.batch_size}")
