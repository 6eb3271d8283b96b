"""Benchmarks of the CNN's training step: generated C, PyTorch and a hand-written C baseline."""
