"""Experiments as one command each: grids (tune), seeds and significance (compare), figures."""
