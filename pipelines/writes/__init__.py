"""What heads write: linear readouts of the residual stream through the final norm and the
unembedding (see ``docs/methods/direct-logit-attribution.md``).

- ``frozen_norm``: the final norm (LayerNorm or RMSNorm) as data, and its frozen-scale linear readout;
- ``lens``: the logit lens, each layer's residual stream through the final norm and unembedding;
- ``dla``: direct logit attribution of one target logit (or a logit difference) into the embedding,
  each head (split exactly over its source positions), each MLP and the biases;
- ``value_maps``: value-weighted attention maps ``||a_ij v_j W_O||`` (Kobayashi et al. 2020), lazily.

The functions here take tensors only (no model, no hooks); the wiring to a real model reads its
anatomy (``Sites``) and one recording session.
"""
