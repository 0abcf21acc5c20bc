"""auto-circuit's side of the EAP comparison (run with the Python of ``.cache/peer-venvs/auto-circuit``:
auto-circuit 1.0.1 on TransformerLens 2.18's ``HookedTransformer``; nothing from attnscope is imported).

    PYTHON bench/peers/autocircuit_side.py eap FOLDER PAIR.json OUT_DIR [--threads 1]

TransformerLens 2.18 has no SmolLM2 entry, so the ``HookedTransformer`` is built from the Hugging Face
folder attnscope writes: a config read off ``config.json`` (RMS norms, rotary, gated SiLU MLP, grouped-query
attention **ungrouped**, ``ungroup_grouped_query_attention=True``: auto-circuit patches each query head's
k/v input) and ``convert_llama_weights`` of the folder's weights, nothing folded or centred. Then
``patchable_model(factorized=True, slice_output="last_seq", separate_qkv=True)`` and
``mask_gradient_prune_scores(grad_function="logit", answer_function="avg_diff", mask_val=0.0)`` (auto-circuit's
EAP, equal to its ``edge_attribution_patching_prune_scores``) on the one clean/corrupted pair of
``PAIR.json`` (metric ``logit[correct] - logit[wrong]`` at the last position). Timed: the patchable
model's construction and the scores. ``OUT_DIR/edges.json``: edge name -> score.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import emit, measure  # noqa: E402


def tokenizer_of(folder: str):
    """The folder's tokenizer for transformers 4: its ``tokenizer_config.json`` (written by transformers 5)
    names the class ``TokenizersBackend``, which 4.x does not have; ``tokenizer.json`` and the special
    tokens are the same (only ids go through the model here). ``add_bos_token=True`` keeps TransformerLens
    from loading a second copy through ``AutoTokenizer`` (``get_tokenizer_with_bos``); ``default_prepend_bos``
    is off, so no BOS is added to the ids."""
    from transformers import PreTrainedTokenizerFast

    conf = json.loads((Path(folder) / "tokenizer_config.json").read_text())
    special = {k: conf[k] for k in ("bos_token", "eos_token", "pad_token", "unk_token") if k in conf}
    return PreTrainedTokenizerFast(
        tokenizer_file=str(Path(folder) / "tokenizer.json"), name_or_path=folder, add_bos_token=True, **special
    )


def hooked_smollm2(folder: str):
    from transformer_lens import HookedTransformer, HookedTransformerConfig
    from transformer_lens.pretrained.weight_conversions.llama import convert_llama_weights
    from transformers import AutoModelForCausalLM

    hf = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32).eval()
    c = hf.config
    # The folder's config.json (transformers 5) holds rope_theta in rope_parameters only; transformers 4 reads
    # it as a top-level rope_theta it does not find and gives its default, 10,000 (SmolLM2's is 100,000).
    rope = (getattr(c, "rope_parameters", None) or {}).get("rope_theta") or c.rope_theta
    d_head = c.hidden_size // c.num_attention_heads
    cfg = HookedTransformerConfig(
        d_model=c.hidden_size,
        d_head=d_head,
        n_heads=c.num_attention_heads,
        d_mlp=c.intermediate_size,
        n_layers=c.num_hidden_layers,
        n_ctx=2048,
        eps=c.rms_norm_eps,
        d_vocab=c.vocab_size,
        act_fn="silu",
        n_key_value_heads=c.num_key_value_heads,
        normalization_type="RMS",
        positional_embedding_type="rotary",
        rotary_adjacent_pairs=False,
        rotary_dim=d_head,
        rotary_base=rope,
        final_rms=True,
        gated_mlp=True,
        original_architecture="LlamaForCausalLM",
        default_prepend_bos=False,
        ungroup_grouped_query_attention=True,
        dtype=torch.float32,
        device="cpu",
    )
    model = HookedTransformer(cfg, tokenizer_of(folder))
    model.load_and_process_state_dict(
        convert_llama_weights(hf, cfg),
        fold_ln=False,
        center_writing_weights=False,
        center_unembed=False,
        fold_value_biases=False,
        refactor_factored_attn_matrices=False,
    )
    model.set_use_split_qkv_input(True)
    model.set_use_attn_result(True)
    model.set_use_hook_mlp_in(True)
    return model.eval()


def main() -> None:
    from importlib.metadata import version

    ap = argparse.ArgumentParser()
    ap.add_argument("task", choices=["eap"])
    ap.add_argument("folder")
    ap.add_argument("pair")
    ap.add_argument("out")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.set_num_threads(a.threads)
    from auto_circuit.data import PromptDataLoader, PromptDataset
    from auto_circuit.prune_algos.mask_gradient import mask_gradient_prune_scores
    from auto_circuit.utils.graph_utils import patchable_model

    pair = json.loads(Path(a.pair).read_text())
    clean, corrupt = torch.tensor([pair["clean"]]), torch.tensor([pair["corrupted"]])
    right, wrong = pair["answers"]
    model = hooked_smollm2(a.folder)
    dataset = PromptDataset(clean, corrupt, torch.tensor([[right]]), torch.tensor([[wrong]]))
    loader = PromptDataLoader(dataset, seq_len=None, diverge_idx=0, batch_size=1, shuffle=False)

    with torch.no_grad():
        model(clean[:, -6:])  # warm

    def eap():
        pm = patchable_model(
            model, factorized=True, slice_output="last_seq", separate_qkv=True, device=torch.device("cpu")
        )
        scores = mask_gradient_prune_scores(
            pm, loader, None, grad_function="logit", answer_function="avg_diff", mask_val=0.0
        )
        return pm, scores

    (pm, scores), report = measure(eap)
    edges = {e.name: float(e.prune_score(scores)) for e in pm.edges}
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "edges.json").write_text(json.dumps(edges))
    report.update(side="auto-circuit", version=version("auto-circuit"), tl=version("transformer-lens"), task=a.task)
    report.update(edges=len(edges), tokens=clean.shape[1], threads=torch.get_num_threads())
    emit(report)


if __name__ == "__main__":
    main()
