"""awrsr: attention-based sequential recommendation with attention weight refinement."""

__version__ = "0.1.0"
