"""Vision runs through the HTTP client: dataset samples, uploads, every bad image case, structure."""

import io

import numpy as np
import pytest
from PIL import Image

from attnscope.models.zoo import data, samples
from attnscope.models.zoo.manifest import read_manifest

API = "/api/v1"
VISION = "gauss9-iso"
TEXT = "text-vanilla"
pytestmark = [
    pytest.mark.skipif(
        read_manifest(VISION) is None or read_manifest(TEXT) is None, reason="zoo checkpoints not trained; run make zoo"
    ),
    pytest.mark.skipif(not data.available(), reason="data folder not found; set ATTNSCOPE_DATA_DIR"),
]


def png(array: np.ndarray, mode: str | None = None, fmt: str = "PNG") -> bytes:
    buf = io.BytesIO()
    img = Image.fromarray(array) if mode is None else Image.fromarray(array, mode=mode)
    img.save(buf, format=fmt)
    return buf.getvalue()


def upload(client, blob: bytes, model: str = VISION, name: str = "digit.png"):
    return client.post(
        f"{API}/runs/image",
        data={"model": model},
        files={"file": (name, blob, "image/png")},
        headers={"X-Requested-With": "XMLHttpRequest"},
    )


@pytest.fixture(scope="module")
def sample_run(client):
    r = client.post(f"{API}/runs", json={"model": VISION, "sample": {"dataset": "mnist", "index": 7}})
    assert r.status_code == 201, r.text
    return r.json()


def test_sample_run_has_a_grid_and_a_digit_prediction(client, sample_run):
    assert sample_run["grid"] == [14, 14] and sample_run["shape"][2:] == [196, 196]
    assert sample_run["image"] == {
        "kind": "sample",
        "dataset": "mnist",
        "index": 7,
        "label": samples.labels("mnist")[7],
        "sha256": None,
        "width": 28,
        "height": 28,
    }
    pred = sample_run["prediction"]
    assert pred["kind"] == "classification" and pred["labels"] == [str(i) for i in range(10)]
    assert abs(sum(pred["probs"]) - 1) < 1e-4
    again = client.post(f"{API}/runs", json={"model": VISION, "sample": {"dataset": "mnist", "index": 7}}).json()
    assert again["id"] == sample_run["id"]
    head = np.array(
        client.get(f"{API}/runs/{sample_run['id']}/attention", params={"layer": 1, "head": 3}).json()["weights"]
    )
    assert head.shape == (196, 196) and np.allclose(head.sum(1), 1, atol=1e-4)


def test_run_image_is_the_digit_the_model_saw(client, sample_run):
    r = client.get(f"{API}/runs/{sample_run['id']}/image")
    assert r.status_code == 200 and r.headers["content-type"] == "image/png"
    seen = np.asarray(Image.open(io.BytesIO(r.content)))
    np.testing.assert_array_equal(seen, samples.sample("mnist", 7)[0])


def test_upload_of_the_same_digit_gives_the_same_prediction_even_inverted(client, sample_run):
    digit = samples.sample("mnist", 7)[0]
    for blob in (png(digit), png(255 - digit), png(np.repeat(digit[:, :, None], 3, 2)), png(digit, fmt="JPEG")):
        r = upload(client, blob)
        assert r.status_code == 201, r.text
        body = r.json()
        assert body["image"]["kind"] == "upload" and len(body["image"]["sha256"]) == 64
        tol = 0.05 if blob[:2] == b"\xff\xd8" else 1e-5  # JPEG is lossy
        np.testing.assert_allclose(body["prediction"]["probs"], sample_run["prediction"]["probs"], atol=tol)


def test_a_large_photo_is_resized_to_the_models_input(client):
    big = np.zeros((300, 200), np.uint8)
    big[100:200, 90:110] = 255  # a "1"
    body = upload(client, png(big)).json()
    assert body["image"]["width"] == 28 and body["image"]["height"] == 28


@pytest.mark.parametrize(
    "blob, code, words",
    [
        (b"", 422, "empty"),
        (b"this is not an image at all", 415, "not a PNG or JPEG"),
        (png(np.zeros((8, 8, 4), np.uint8), "RGBA"), 422, "4 channels"),
        (png(np.zeros((8, 8, 2), np.uint8), "LA"), 422, "2 channels"),
        (png(np.random.default_rng(0).integers(0, 255, (64, 64), dtype=np.uint8))[:2000], 422, "could not be decoded"),
        (png(np.zeros((8, 8), np.uint8), fmt="GIF"), 415, "PNG or JPEG"),
        (png(np.zeros((4100, 4100), np.uint8)), 413, "limit"),
    ],
    ids=["zero-bytes", "not-an-image", "rgba", "gray-alpha", "truncated", "gif", "too-many-pixels"],
)
def test_bad_images_get_a_clear_4xx_and_the_server_keeps_serving(client, blob, code, words):
    r = upload(client, blob)
    assert r.status_code == code, r.text
    assert words in r.json()["detail"]
    assert client.get(f"{API}/health").status_code == 200


@pytest.mark.parametrize("fmt, side", [("BMP", 8), ("TIFF", 8), ("GIF", 4100), ("WEBP", 4100)])
def test_other_formats_are_refused_before_any_decoder_runs(client, fmt, side):
    """Issue 29 part 5: a non-PNG/JPEG image was parsed (and a huge one hit the pixel limit, 413) before
    its 415. Another format now gets 415 from its first bytes, a 4100x4100 one too."""
    from attnscope.models.inputs import MAGIC

    blob = png(np.zeros((side, side), np.uint8), fmt=fmt)
    assert not blob.startswith(MAGIC)
    r = upload(client, blob)
    assert r.status_code == 415, r.text
    assert "first bytes" in r.json()["detail"]


def test_zero_size_image_array_is_refused():
    from attnscope.models.inputs import InvalidImageError, check_array

    with pytest.raises(InvalidImageError, match="zero size"):
        check_array(np.zeros((0, 5), np.uint8))


def test_an_image_for_a_text_model_and_a_text_for_a_vision_model_are_refused(client):
    r = upload(client, png(np.zeros((28, 28), np.uint8)), model=TEXT)
    assert r.status_code == 422 and "text model" in r.json()["detail"]
    r = client.post(f"{API}/runs", json={"model": VISION, "text": "a digit"})
    assert r.status_code == 422 and "vision model" in r.json()["detail"]


def test_unknown_samples_and_models_get_404(client):
    r = client.post(f"{API}/runs", json={"model": VISION, "sample": {"dataset": "mnist", "index": 99999}})
    assert r.status_code == 404 and "outside" in r.json()["detail"]
    assert upload(client, png(np.zeros((28, 28), np.uint8)), model="nope").status_code == 404
    assert client.get(f"{API}/datasets/nope/samples").status_code == 404


def test_sample_listing_and_sample_image(client):
    body = client.get(f"{API}/datasets/mnist/samples", params={"offset": 5, "limit": 3}).json()
    assert body["total"] == 2000 and [s["index"] for s in body["samples"]] == [5, 6, 7]
    assert [s["label"] for s in body["samples"]] == samples.labels("mnist")[5:8]
    img = client.get(f"{API}/datasets/mnist/samples/5/image")
    assert img.headers["content-type"] == "image/png"
    np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(img.content))), samples.sample("mnist", 5)[0])


def test_models_lists_zoo_models_with_family_accuracy_and_params(client):
    models = {m["name"]: m for m in client.get(f"{API}/models").json()["models"]}
    for name in (VISION, TEXT):
        m = models[name]
        manifest = read_manifest(name)
        assert m["accuracy"] == manifest["eval_accuracy"] and m["params"] == manifest["params"]
        assert m["paper"] and m["family"] and m["source"] == "zoo"
    assert models[VISION]["modality"] == "vision" and models[TEXT]["modality"] == "text"


def test_gaussian_structure_gives_each_heads_centre_and_spread(client):
    body = client.get(f"{API}/models/{VISION}/structure").json()
    assert body["kind"] == "gaussian" and body["grid"] == [14, 14]
    assert len(body["layers"]) == 2 and len(body["layers"][0]) == 9
    cov = np.array(body["layers"][0][0]["cov"])
    assert cov.shape == (2, 2) and np.all(np.linalg.eigvalsh(cov) > 0)
    r = client.get(f"{API}/models/{TEXT}/structure")
    assert r.status_code == 404 and "Gaussian" in r.json()["detail"]


@pytest.mark.skipif(read_manifest("conv-attention") is None, reason="conv-attention not trained")
def test_conv_attention_demo_serves_the_conv_and_its_attention_side_by_side(client, sample_run):
    run = client.post(
        f"{API}/runs", json={"model": "conv-attention", "sample": {"dataset": "mnist", "index": 7}}
    ).json()
    assert run["grid"] == [16, 16] and run["shape"] == [1, 9, 256, 256] and run["image"]["width"] == 32
    heads = np.array(client.get(f"{API}/runs/{run['id']}/attention", params={"layer": 0}).json()["weights"])
    q = 5 * 16 + 6  # interior query (5, 6) of the padded grid: head h attends to tap h's shift
    taps = [(di, dj) for di in (-1, 0, 1) for dj in (-1, 0, 1)]
    assert [int(heads[h, q].argmax()) for h in range(9)] == [(5 + di) * 16 + 6 + dj for di, dj in taps]
    pair = client.get(f"{API}/runs/{run['id']}/conv-vs-attention", params={"channel": 3}).json()
    assert pair["grid"] == [14, 14] and pair["n_channels"] == 16
    np.testing.assert_allclose(pair["conv"], pair["attention"], atol=1e-4)
    assert pair["max_abs_diff"] < 1e-4 and np.abs(pair["conv"]).max() > 0.1
    assert client.get(f"{API}/runs/{run['id']}/conv-vs-attention", params={"channel": 16}).status_code == 422
    r = client.get(f"{API}/runs/{sample_run['id']}/conv-vs-attention")
    assert r.status_code == 404 and "conv-as-attention" in r.json()["detail"]
