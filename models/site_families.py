"""The one table of model families; ``attnscope.models.site_table`` builds ``Sites`` from it
(``attnscope.models.sites``).

A family is one ``Family`` entry: where its blocks are, and per block the dotted paths of the
attention, the projections (and how their weights are laid out), the norms and the MLP. Hugging
Face models are looked up by ``config.model_type``; the zoo's multi-head attention models by
``"zoo"``. A family that is not in the table is refused with the missing parts named: a new family
is one entry here plus a test (``tests/models/test_sites_families.py``).

Paths of blocks, embeddings and the final norm are relative to the model's ``base_model`` (the
transformer body); ``unembed`` is relative to the model itself (an LM or classification head).
Projection layouts (``proj``):

| layout | weights |
|---|---|
| ``linear`` | ``nn.Linear``: q/k/v ``[heads * d_head, d_model]``, o ``[d_model, heads * d_head]`` |
| ``conv1d-fused`` | GPT-2 ``Conv1D`` (weight ``[in, out]``): ``qkv`` ``[d_model, 3 * d_model]`` = q, k, v blocks |
| ``neox-fused`` | GPT-NeoX ``nn.Linear`` ``qkv`` ``[heads * 3 * d_head, d_model]``, per head q, k, v |
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Family:
    """One model family's anatomy (paths are dotted attribute paths; see the module docstring).

    ``q``/``k``/``v`` or ``qkv`` (fused) name the projections, ``o`` the output projection (its
    input is the heads' outputs ``head_z``); ``attn_out``/``mlp_out``: the modules whose output is
    the block's attention / MLP contribution (default ``o`` / ``mlp``); ``out_scale``/``mlp_scale``:
    a layer-scale parameter after them. ``rope``: the rotary module of the body and ``rotate``, the
    name of the function in the attention's module that applies it."""

    blocks: str
    attn: str
    o: str
    ln_attn: str
    ln_mlp: str
    mlp: str
    embed: str
    norm: str  # "layernorm" | "rmsnorm"
    placement: str = "pre"
    q: str | None = None
    k: str | None = None
    v: str | None = None
    qkv: str | None = None
    proj: str = "linear"
    attn_out: str | None = None
    mlp_out: str | None = None
    out_scale: str | None = None
    mlp_scale: str | None = None
    final_norm: str | None = None
    unembed: str | None = None
    unembed_kind: str = "lm_head"
    pooling: str | None = None  # a classifier's pooling ("cls", "mean"); None: the zoo config's ``pool``
    pooler: str | None = None  # a dense layer between the pooled vector and the head (path in the body)
    pooler_act: str | None = None  # its activation ("tanh")
    rope: str | None = None
    rotate: str = "apply_rotary_pos_emb"
    parallel_attr: str | None = None  # config flag: attention and MLP both read resid_pre
    parallel: bool = False  # always parallel (Phi: one norm read by both)
    attn_out_norm: str | None = None  # a norm after the output projection (Gemma 2's sandwich norms)
    mlp_out_norm: str | None = None
    softcap_attr: str | None = None  # config: the final logits' soft-cap
    logit_carry: str | None = None  # a block attribute that, when set, carries logits to the next layer (EA)
    startable: bool = True  # blocks take (hidden_states, ...) and return the stream: a forward may start at one
    pass_state: bool = False  # blocks are called block(x, state): the zoo
    bias_path: str | None = None  # a positional logit-bias module of the attention, when set
    scores_attr: str | None = None  # SAN: the attention's mode attribute -> scores "san-<mode>"
    mlp_in: str | None = None  # a plain MLP's two linear layers and activation
    mlp_proj: str | None = None
    act: str | None = None


LLAMA = Family(
    blocks="layers",
    attn="self_attn",
    q="self_attn.q_proj",
    k="self_attn.k_proj",
    v="self_attn.v_proj",
    o="self_attn.o_proj",
    ln_attn="input_layernorm",
    ln_mlp="post_attention_layernorm",
    mlp="mlp",
    embed="embed_tokens",
    norm="rmsnorm",
    final_norm="norm",
    unembed="lm_head",
    rope="rotary_emb",
)

FAMILIES: dict[str, Family] = {
    "llama": LLAMA,
    "mistral": LLAMA,
    "qwen2": LLAMA,  # q/k/v biases: read where present
    "gemma": replace(LLAMA, norm="rmsnorm1p"),  # Gemma: x / rms * (1 + weight)
    "gemma2": Family(
        blocks="layers",
        attn="self_attn",
        q="self_attn.q_proj",
        k="self_attn.k_proj",
        v="self_attn.v_proj",
        o="self_attn.o_proj",
        ln_attn="input_layernorm",
        ln_mlp="pre_feedforward_layernorm",
        attn_out="post_attention_layernorm",
        attn_out_norm="post_attention_layernorm",
        mlp_out="post_feedforward_layernorm",
        mlp_out_norm="post_feedforward_layernorm",
        mlp="mlp",
        embed="embed_tokens",
        norm="rmsnorm1p",
        final_norm="norm",
        unembed="lm_head",
        softcap_attr="final_logit_softcapping",
        rope="rotary_emb",
    ),
    "phi": Family(
        blocks="layers",
        attn="self_attn",
        q="self_attn.q_proj",
        k="self_attn.k_proj",
        v="self_attn.v_proj",
        o="self_attn.dense",
        ln_attn="input_layernorm",
        ln_mlp="input_layernorm",
        mlp="mlp",
        embed="embed_tokens",
        norm="layernorm",
        final_norm="final_layernorm",
        unembed="lm_head",
        rope="rotary_emb",
        parallel=True,
    ),
    "gpt2": Family(
        blocks="h",
        attn="attn",
        qkv="attn.c_attn",
        o="attn.c_proj",
        proj="conv1d-fused",
        ln_attn="ln_1",
        ln_mlp="ln_2",
        mlp="mlp",
        embed="wte",
        norm="layernorm",
        final_norm="ln_f",
        unembed="lm_head",
    ),
    "gpt_neox": Family(
        blocks="layers",
        attn="attention",
        qkv="attention.query_key_value",
        o="attention.dense",
        proj="neox-fused",
        ln_attn="input_layernorm",
        ln_mlp="post_attention_layernorm",
        mlp="mlp",
        embed="embed_in",
        norm="layernorm",
        final_norm="final_layer_norm",
        unembed="lm_head",
        rope="rotary_emb",
        parallel_attr="use_parallel_residual",
    ),
    "bert": Family(
        blocks="encoder.layer",
        attn="attention",
        q="attention.self.query",
        k="attention.self.key",
        v="attention.self.value",
        o="attention.output.dense",
        ln_attn="attention.output.LayerNorm",
        ln_mlp="output.LayerNorm",
        mlp="intermediate",
        mlp_out="output.dense",
        embed="embeddings",
        norm="layernorm",
        placement="post",
        unembed="classifier",  # BertForSequenceClassification; a bare BertModel (an embedding) has none
        unembed_kind="classifier",
        pooling="cls",
        pooler="pooler.dense",
        pooler_act="tanh",
    ),
    "dinov2": Family(
        blocks="encoder.layer",
        attn="attention",
        q="attention.q_proj",  # transformers 5's Dinov2Attention (the registry's Dinov2Model)
        k="attention.k_proj",
        v="attention.v_proj",
        o="attention.o_proj",
        attn_out="layer_scale1",
        out_scale="layer_scale1.lambda1",
        mlp_out="layer_scale2",
        mlp_scale="layer_scale2.lambda1",
        ln_attn="norm1",
        ln_mlp="norm2",
        mlp="mlp",
        embed="embeddings",
        norm="layernorm",
        final_norm="layernorm",
    ),
    "zoo": Family(
        blocks="encoder.blocks",
        attn="attn",
        q="attn.q",
        k="attn.k",
        v="attn.v",
        o="attn.out",
        ln_attn="ln1",
        ln_mlp="ln2",
        mlp="ffn",
        embed="embed",
        norm="layernorm",
        final_norm="norm",
        unembed="head",
        unembed_kind="classifier",
        logit_carry="attn.ea",
        startable=False,
        pass_state=True,
        bias_path="attn.bias",
        mlp_in="ffn.0",
        mlp_proj="ffn.3",
        act="gelu",
    ),
    "zoo-san": Family(
        blocks="encoder.blocks",
        attn="attn",
        v="attn.beta",
        o="attn.out",
        ln_attn="ln1",
        ln_mlp="ln2",
        mlp="ffn",
        embed="embed",
        norm="layernorm",
        final_norm="norm",
        unembed="head",
        unembed_kind="classifier",
        startable=False,
        pass_state=True,
        scores_attr="attn.mode",
        mlp_in="ffn.0",
        mlp_proj="ffn.3",
        act="gelu",
    ),
}
