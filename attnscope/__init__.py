"""attnscope: attention interpretability and visualisation (CLI entry point package)."""

__version__ = "0.1.0"
