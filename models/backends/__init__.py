"""One small model interface (``Backend``) and one implementation per kind of model: Hugging Face
encoder (``hf_encoder``), Hugging Face causal LM (``hf_causal``), zoo (``zoo``), DINOv2
(``dinov2``). ``attnscope.models.loading`` picks one for a spec; everything else asks the backend."""

from attnscope.models.backends.base import AttentionConfig, Backend, BackendBase, Capture, ModelInput, TextTokenizer

__all__ = ["AttentionConfig", "Backend", "BackendBase", "Capture", "ModelInput", "TextTokenizer"]
