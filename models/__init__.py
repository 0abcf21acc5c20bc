"""Inference backend: model registry, offline loading with eager attention, attention capture."""
