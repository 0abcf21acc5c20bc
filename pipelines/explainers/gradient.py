"""Captum attribution methods as explainers: the explained output is p(target | x).

Every method attributes w.r.t. the word embeddings of THIS request (``inputs_embeds``, a tensor made
per call), never through hooks on the shared embedding layer: captum's layer methods
(LayerIntegratedGradients, LayerDeepLift) register forward hooks on the model every request shares,
and two concurrent requests then read each other's activations. Gradients come from
``torch.autograd.grad`` w.r.t. those embeddings (captum's ``compute_gradients``): nothing is written
into the shared parameters' ``.grad``. For the word-embedding layer the two are the same
computation (the model adds positions and norms after ``inputs_embeds`` exactly as after its own
look-up).

Integrated gradients and DeepLift use the baseline "every non-special token replaced by [PAD],
special tokens kept" (its embeddings); DeepLift's rescale rules are hooks on the model's
nonlinearities, so it runs on a per-request module shell sharing the weights
(``attnscope.models.shell``). Saliency (L2 norm of the gradient over the embedding dimension) and
InputXGradient take the word embeddings as input; Occlusion is captum's FeatureAblation, one token
at a time, replaced by [MASK]. Scores are summed over the embedding dimension. Internal batch sizes
keep long inputs within memory.
"""

from __future__ import annotations

import numpy as np
import torch

from attnscope.models.cancel import check_cancelled
from attnscope.models.shell import module_shell
from attnscope.pipelines.explainers.base import Encoded, Explainer, classifier_module, text_tokenizer


class _ProbModel(torch.nn.Module):
    """ids (+ mask) -> class probabilities; captum's DeepLift and FeatureAblation need an ``nn.Module``."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask=None):
        check_cancelled()  # captum calls this once per batch: a cancelled request stops here
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        return torch.softmax(self.model(input_ids=input_ids, attention_mask=attention_mask).logits, dim=-1)


class _EmbedsProbModel(torch.nn.Module):
    """inputs_embeds ``[batch, token, dim]`` (+ mask ``[batch, token]``) -> class probabilities ``[batch, class]``."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, embeds, attention_mask):
        check_cancelled()
        if attention_mask.shape[0] != embeds.shape[0]:  # captum batches the inputs, not always the extra args
            attention_mask = attention_mask[:1].expand(embeds.shape[0], -1)
        return torch.softmax(self.model(inputs_embeds=embeds, attention_mask=attention_mask).logits, dim=-1)


def _word_embeddings(model: torch.nn.Module) -> torch.nn.Module:
    return model.get_input_embeddings()


def _embed(model: torch.nn.Module, ids: torch.Tensor) -> torch.Tensor:
    """This request's word embeddings ``[1, token, dim]``, detached (a new leaf, no graph to the weights)."""
    with torch.no_grad():
        return _word_embeddings(model)(ids).detach()


def _reference_ids(explainer: Explainer, ex: Encoded) -> torch.Tensor:
    tok = text_tokenizer(explainer.loaded)
    ref = np.full(len(ex), tok.pad_token_id or 0, dtype=np.int64)
    ref[list(ex.special)] = ex.input_ids[list(ex.special)]
    return torch.as_tensor(ref, device=explainer.loaded.device)[None]


def import_captum() -> None:
    """Import captum's attribution methods now (2-4 s: captum imports matplotlib) instead of inside the first
    request that needs them: there the import held the API's event loop up to ~1.4 s (``bench/stalls.py``)."""
    import captum.attr  # noqa: F401


class IntegratedGradients(Explainer):
    """Captum IntegratedGradients on this request's word embeddings ([PAD] baseline); ``last_delta``
    is captum's convergence delta (completeness error) of the latest call."""

    name = "integrated_gradients"
    description = "captum IntegratedGradients on the word embeddings ([PAD] baseline)"
    last_delta: float = float("nan")

    def explain(self, ex: Encoded) -> np.ndarray:
        from captum.attr import IntegratedGradients as CaptumIG

        target = self.target_of(ex)
        ids, mask = self.tensors(ex)
        model = classifier_module(self.loaded)
        steps = int(self.options.get("n_steps", 32))
        batch = max(1, int(self.options.get("internal_batch_size", max(1, 4096 // len(ex)))))
        ig = CaptumIG(_EmbedsProbModel(model))
        with torch.enable_grad():
            attr, delta = ig.attribute(
                _embed(model, ids),
                baselines=_embed(model, _reference_ids(self, ex)),
                target=target,
                additional_forward_args=(mask,),
                n_steps=steps,
                internal_batch_size=batch,
                return_convergence_delta=True,
            )
        self.last_delta = float(delta.abs().max())
        return attr.sum(dim=-1)[0].detach().cpu().double().numpy()


class DeepLift(Explainer):
    """Captum DeepLift (rescale rule) on this request's word embeddings ([PAD] baseline), run on a
    per-request shell of the model: its rules are hooks on the nonlinearities."""

    name = "deeplift"
    description = "captum DeepLift on the word embeddings ([PAD] baseline)"

    def explain(self, ex: Encoded) -> np.ndarray:
        from captum.attr import DeepLift as CaptumDeepLift

        target = self.target_of(ex)
        ids, mask = self.tensors(ex)
        model = classifier_module(self.loaded)
        shell = module_shell(model)  # hooks land here, never on the shared modules
        dl = CaptumDeepLift(_EmbedsProbModel(shell))
        with torch.enable_grad():
            attr = dl.attribute(
                _embed(model, ids).requires_grad_(True),
                baselines=_embed(model, _reference_ids(self, ex)),
                target=target,
                additional_forward_args=(mask,),
            )
        return attr.sum(dim=-1)[0].detach().cpu().double().numpy()


class _EmbeddingMethod(Explainer):
    method = "Saliency"

    def _attribute(self, ex: Encoded) -> torch.Tensor:
        import captum.attr

        target = self.target_of(ex)
        ids, mask = self.tensors(ex)
        model = classifier_module(self.loaded)

        with torch.enable_grad():
            embeds = _embed(model, ids).requires_grad_(True)
            method = getattr(captum.attr, self.method)(_EmbedsProbModel(model))
            kwargs = {"abs": False} if self.method == "Saliency" else {}
            return method.attribute(embeds, target=target, additional_forward_args=(mask,), **kwargs)[0].detach()


class Saliency(_EmbeddingMethod):
    """Captum Saliency: L2 norm over the embedding dimension of d p_t / d embedding."""

    name = "saliency"
    description = "captum Saliency, L2 norm of the gradient per token"
    method = "Saliency"

    def explain(self, ex: Encoded) -> np.ndarray:
        return self._attribute(ex).norm(dim=-1).cpu().double().numpy()


class InputXGradient(_EmbeddingMethod):
    """Captum InputXGradient on the word embeddings, summed over the embedding dimension."""

    name = "input_x_gradient"
    description = "captum InputXGradient on the word embeddings, summed per token"
    method = "InputXGradient"

    def explain(self, ex: Encoded) -> np.ndarray:
        return self._attribute(ex).sum(dim=-1).cpu().double().numpy()


class Occlusion(Explainer):
    """Captum FeatureAblation: each non-special token replaced by [MASK] alone; score = drop of
    p_t. Special tokens keep their id (score 0)."""

    name = "occlusion"
    description = "captum FeatureAblation, one token at a time replaced by [MASK]"

    def explain(self, ex: Encoded) -> np.ndarray:
        from captum.attr import FeatureAblation

        target = self.target_of(ex)
        ids, mask = self.tensors(ex)
        tok = text_tokenizer(self.loaded)
        base = torch.full_like(ids, tok.mask_token_id if tok.mask_token_id is not None else tok.pad_token_id or 0)
        base[0, list(ex.special)] = ids[0, list(ex.special)]
        per_eval = max(1, int(self.options.get("perturbations_per_eval", max(1, 4096 // len(ex)))))
        fa = FeatureAblation(_ProbModel(classifier_module(self.loaded)))
        with torch.no_grad():
            attr = fa.attribute(
                ids,
                baselines=base,
                target=target,
                additional_forward_args=(mask,),
                feature_mask=torch.arange(len(ex), device=ids.device)[None],
                perturbations_per_eval=per_eval,
            )
        return attr[0].cpu().double().numpy()
