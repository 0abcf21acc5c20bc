"""Six tiny random causal LMs (GPT-2, Llama, Qwen2, Mistral with a sliding window, Gemma 2 with
soft-capping, Phi), built in a temp model root, served by a real API server over HTTP: their maps
equal the eager forward's ``output_attentions`` (upper triangle exactly 0), next-token predictions,
generation (greedy tokens equal transformers' ``generate``; each step's rows equal the full
forward's), chat template, grouped-query heads, readable tokens, and every bad input as a 4xx."""

import json
import os

import httpx
import numpy as np
import pytest
import torch

from attnscope.server.config import Settings

API = "/api/v1"
ARCHS = ["gpt2", "llama", "qwen2", "mistral", "gemma2", "phi"]
PROMPT = "The capital of France is Paris, and the cat sat on the mat."


@pytest.fixture(scope="module")
def bad_root(tmp_path_factory):
    """Folders that are neither a text encoder nor a causal LM."""
    root = tmp_path_factory.mktemp("not-lms")
    for name, config in {
        "t5": {"model_type": "t5", "is_encoder_decoder": True, "architectures": ["T5ForConditionalGeneration"]},
        "vit": {"model_type": "vit", "architectures": ["ViTModel"]},
        "mystery": {"model_type": "no-such-model", "architectures": ["MysteryModel"]},
    }.items():
        (root / name).mkdir()
        (root / name / "config.json").write_text(json.dumps(config))
    return root


@pytest.fixture(scope="module")
def api(tiny_causal_lms, bad_root, start_api):
    root, folders = tiny_causal_lms
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ATTNSCOPE_MODEL_DIRS", f"{root}{os.pathsep}{bad_root}")
        with start_api(Settings(preload=[], max_runs=128)) as url, httpx.Client(base_url=url + API, timeout=120) as c:
            yield c


@pytest.fixture(scope="module")
def eager(tiny_causal_lms):
    """The reference: each checkpoint loaded by transformers itself, eager attention."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    _, folders = tiny_causal_lms
    out = {}
    for arch, folder in folders.items():
        model = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager", dtype=torch.float32).eval()
        out[arch] = (model, AutoTokenizer.from_pretrained(folder))
    return out


def _maps(api, run) -> np.ndarray:
    n_layers = run["shape"][0]
    return np.stack(
        [
            np.array(api.get(f"/runs/{run['id']}/attention", params={"layer": l}).json()["weights"])
            for l in range(n_layers)
        ]
    )


def _post(api, **body):
    r = api.post("/runs", json=body)
    assert r.status_code == 201, r.text
    return r.json()


def test_models_lists_the_causal_lms_and_refuses_the_others(api):
    models = {m["name"]: m for m in api.get("/models").json()["models"]}
    for arch in ARCHS:
        m = models[f"local:{arch}"]
        assert m["task"] == "causal-lm" and m["family"] == arch and m["modality"] == "text"
        assert m["max_tokens"] == 64 and m["context"] == 64
    assert models["local:llama"]["kv_heads"] == 2 and models["local:gpt2"]["kv_heads"] == 4
    assert not {"local:t5", "local:vit", "local:mystery"} & set(models)
    for name, words in [("local:t5", "encoder-decoder"), ("local:vit", "neither a text encoder nor a causal LM")]:
        r = api.post("/runs", json={"model": name, "text": "hello"})
        assert r.status_code == 422 and words in r.json()["detail"], r.text
    r = api.post("/runs", json={"model": "local:mystery", "text": "hello"})
    assert r.status_code == 422 and "does not know" in r.json()["detail"]
    assert api.get("/health").json()["status"] == "ok"


@pytest.mark.parametrize("arch", ARCHS)
def test_maps_equal_the_eager_forward_and_are_causal(api, eager, arch):
    run = _post(api, model=f"local:{arch}", text=PROMPT)
    model, tok = eager[arch]
    ids = tok(PROMPT)["input_ids"]
    assert run["token_ids"] == ids and run["causal"] is True
    with torch.no_grad():
        out = model(input_ids=torch.tensor([ids]), output_attentions=True)
    ref = torch.stack(out.attentions, 1)[0].numpy()
    maps = _maps(api, run)
    assert run["shape"] == list(ref.shape) == [2, 4, len(ids), len(ids)]
    # the server computes maps lazily from the recorded q/k (its own softmax): equal to the eager
    # forward's probabilities to 1e-5 in float32 (the stated bound; summation order differs)
    np.testing.assert_allclose(maps, ref, atol=1e-5)
    assert np.all(np.triu(maps, 1) == 0.0)
    if arch == "mistral":  # a window of 4 keys: row q sees q-3..q only
        q = len(ids) - 1
        assert np.all(maps[:, :, q, : q - 3] == 0.0) and np.all(maps[:, :, q, q - 3 :] > 0)
    if arch == "gemma2":  # layer 0 slides, layer 1 sees every earlier key
        q = len(ids) - 1
        assert np.all(maps[0, :, q, : q - 3] == 0.0) and np.all(maps[1, :, q, :] > 0)
    # next-token predictions at every position, from the model's own logits
    logp = torch.log_softmax(out.logits[0].float(), -1)
    pred = run["prediction"]
    assert pred["kind"] == "next-token" and len(pred["top_k"]) == len(ids)
    top = [e["token_id"] for e in pred["top_k"][-1]]
    assert top == torch.topk(logp[-1], 10).indices.tolist()
    assert pred["predicted_id"] == top[0] and pred["predicted"] == tok.decode([top[0]])
    probs = [e["prob"] for e in pred["top_k"][3]]
    assert probs == sorted(probs, reverse=True)
    np.testing.assert_allclose(probs[0], float(logp[3].exp().max()), rtol=1e-5)
    expected_loss = -logp[:-1].gather(1, torch.tensor(ids[1:])[:, None])[:, 0].numpy()
    np.testing.assert_allclose(pred["loss"][:-1], expected_loss, rtol=1e-4)
    assert pred["loss"][-1] is None and isinstance(pred["continuation"], str)


def test_grouped_query_heads_and_readable_tokens(api):
    llama = _post(api, model="local:llama", text="The cat\n\tsat")
    assert llama["kv_heads"] == 2 and llama["kv_head_of"] == [0, 0, 1, 1]
    gpt2 = _post(api, model="local:gpt2", text="The cat\n\tsat")
    assert gpt2["kv_heads"] == 4 and gpt2["kv_head_of"] == [0, 1, 2, 3]
    text = "".join(t for t in llama["tokens"])
    assert "Ġ" not in text and "Ċ" not in text
    assert text.replace("␣", " ").replace("↵", "\n").replace("⇥", "\t") == "The cat\n\tsat"
    heads = api.get(f"/runs/{llama['id']}/heads").json()
    assert [h["kv_head"] for h in heads["heads"][:4]] == [0, 0, 1, 1]
    assert "sink" in heads["heads"][0] and "induction" in heads["heads"][0] and "r1..r30" in heads["probe"]
    shift = api.get(f"/runs/{llama['id']}/shift", params={"k": 3}).json()
    assert shift["offsets"] == [-3, -2, -1, 0] and shift["kernel_shape"] == [4]


@pytest.mark.parametrize("arch", ARCHS)
def test_greedy_generation_matches_transformers_and_each_step_is_its_row(api, eager, arch):
    model, tok = eager[arch]
    run = _post(api, model=f"local:{arch}", text=PROMPT, generate={"max_new_tokens": 6})
    ids = tok(PROMPT)["input_ids"]
    gen = run["generation"]
    with torch.no_grad():
        ref = model.generate(torch.tensor([ids]), max_new_tokens=6, do_sample=False, pad_token_id=0, eos_token_id=0)[
            0, len(ids) :
        ].tolist()
    assert gen["token_ids"] == ref[: len(gen["token_ids"])]
    assert gen["stopped"] == ("eos" if len(gen["token_ids"]) < 6 else "max_new_tokens")
    n = len(ids) + len(gen["token_ids"])
    assert run["shape"] == [2, 4, n, n] and run["token_ids"] == ids + gen["token_ids"]
    assert gen["text"] == tok.decode(gen["token_ids"])
    # every row, the generated ones recorded step by step through the cache, equals one full forward
    with torch.no_grad():
        full = model(input_ids=torch.tensor([run["token_ids"]]), output_attentions=True)
    maps = _maps(api, run)
    np.testing.assert_allclose(maps, torch.stack(full.attentions, 1)[0].numpy(), atol=2e-5)
    assert np.all(np.triu(maps, 1) == 0.0)
    for i, step in enumerate(gen["steps"]):
        assert step["position"] == len(ids) + i and step["query"] == step["position"] - 1
        assert step["token_id"] == gen["token_ids"][i] and 0 < step["prob"] <= 1
        rows = api.get(f"/runs/{run['id']}/rows/{step['query']}").json()
        assert rows["shape"] == [2, 4, step["query"] + 1]  # prompt + the tokens generated before
        # lazy maps: a one-row block and the whole map are separate float32 products (rounding apart)
        np.testing.assert_allclose(np.array(rows["weights"]), maps[:, :, step["query"], : step["query"] + 1], atol=1e-5)
    assert run["prediction"]["prompt_tokens"] == len(ids)


def test_sampling_is_seeded_and_the_options_are_part_of_the_run_id(api):
    body = {"model": "local:llama", "text": PROMPT}
    a = _post(api, **body, generate={"max_new_tokens": 8, "temperature": 1.5, "seed": 7})
    b = _post(api, **body, generate={"max_new_tokens": 8, "temperature": 1.5, "seed": 7})
    c = _post(api, **body, generate={"max_new_tokens": 8, "temperature": 1.5, "seed": 8})
    greedy = _post(api, **body, generate={"max_new_tokens": 8, "greedy": True})
    plain = _post(api, **body)
    assert a["id"] == b["id"] and a["generation"]["token_ids"] == b["generation"]["token_ids"]
    assert len({a["id"], c["id"], greedy["id"], plain["id"]}) == 4
    assert a["generation"]["options"] == {"max_new_tokens": 8, "temperature": 1.5, "seed": 7, "greedy": False}
    assert plain["generation"] is None and plain["shape"][-1] == len(plain["token_ids"])


def test_chat_template_wraps_the_prompt(api):
    run = _post(api, model="local:qwen2", text="hello there", chat=True, generate={"max_new_tokens": 3})
    assert run["chat"] is True
    assert run["tokens"][0] == "<|user|>" and "<|assistant|>" in run["tokens"]
    assert 0 in run["special"]
    plain = _post(api, model="local:qwen2", text="hello there")
    assert plain["id"] != run["id"] and plain["chat"] is False


@pytest.mark.parametrize(
    "body, status, words",
    [
        ({"model": "local:llama", "text": "   "}, 422, "empty"),
        ({"model": "local:llama", "text": "word " * 80}, 413, "context is 64 tokens"),
        ({"model": "local:llama", "text": PROMPT, "generate": {"max_new_tokens": 0}}, 422, "max_new_tokens"),
        ({"model": "local:llama", "text": PROMPT, "generate": {"max_new_tokens": 257}}, 422, "max_new_tokens"),
        ({"model": "local:llama", "text": PROMPT, "generate": {"max_new_tokens": 60}}, 413, "plus max_new_tokens"),
        ({"model": "local:llama", "text": PROMPT, "generate": {"temperature": 0}}, 422, "temperature"),
        ({"model": "local:llama", "text": PROMPT, "generate": {"temperature": -1}}, 422, "temperature"),
        ({"model": "local:llama", "text": PROMPT, "generate": {"temperature": 11}}, 422, "temperature"),
        ({"model": "local:llama", "text": PROMPT, "generate": {"temperature": "hot"}}, 422, "temperature"),
        ({"model": "local:llama", "text": PROMPT, "generate": {"temperature": 1, "greedy": True}}, 422, "not both"),
        ({"model": "local:llama", "text": PROMPT, "generate": {"greedy": False}}, 422, "needs a temperature"),
        ({"model": "local:llama", "text": PROMPT, "generate": {"top_p": 0.9}}, 422, "top_p"),
        ({"model": "minilm", "text": PROMPT, "generate": {"max_new_tokens": 4}}, 422, "does not generate"),
        ({"model": "minilm", "text": PROMPT, "chat": True}, 422, "causal LM"),
    ],
)
def test_bad_input_is_a_clear_4xx_and_the_server_keeps_serving(api, body, status, words):
    r = api.post("/runs", json=body)
    assert r.status_code == status, r.text
    assert words in r.json()["detail"], r.json()["detail"]
    assert api.get("/health").json()["status"] == "ok"


def test_rows_of_a_position_out_of_range(api):
    run = _post(api, model="local:phi", text="a cat")
    r = api.get(f"/runs/{run['id']}/rows/{len(run['tokens'])}")
    assert r.status_code == 422 and "out of range" in r.json()["detail"]
    blob = api.get(f"/runs/{run['id']}/rows/1", params={"format": "float16"})
    assert blob.status_code == 200 and blob.content[:4] == b"ATNS"


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_explainers_and_eraser_metrics_explain_a_next_token(api, arch):
    """Target = the predicted next token at a chosen position; every explainer runs through the
    backend's next-token classifier and the ERASER metrics score it."""
    run = _post(api, model=f"local:{arch}", text=PROMPT, generate={"max_new_tokens": 3})
    position = len(run["tokens"]) - 2  # a generated token's position: explain what comes after it
    names = ["attention", "rollout", "flow", "attn_grad", "integrated_gradients", "saliency", "input_x_gradient"]
    names += ["deeplift", "occlusion", "random"]
    r = api.post(f"/runs/{run['id']}/faithfulness", json={"explainers": names, "position": position, "k": 0.3})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["position"] == position and len(body["tokens"]) == position + 1
    assert body["target"] == run["prediction"]["top_k"][position][0]["token_id"]
    assert body["label_ids"][0] == body["target"] and body["target_label"] == body["labels"][0]
    np.testing.assert_allclose(body["probs"][0], run["prediction"]["top_k"][position][0]["prob"], rtol=1e-4)
    for e in body["explainers"]:
        assert len(e["scores"]) == position + 1 and np.all(np.isfinite(e["scores"])), e["name"]
        assert -1 <= e["comprehensiveness"] <= 1 and -1 <= e["sufficiency"] <= 1, e
    assert api.post(f"/runs/{run['id']}/faithfulness", json={"position": 999}).status_code == 422
    minilm = _post(api, model="minilm", text=PROMPT)
    r = api.post(f"/runs/{minilm['id']}/faithfulness", json={})
    assert r.status_code == 422 and "smollm2" in r.json()["detail"]


def test_every_structure_and_measure_route_answers_a_causal_run(api):
    """No route may fail with a 500 on a decoder's run: each gives its result or a 4xx saying why."""
    run = _post(api, model="local:mistral", text=PROMPT, generate={"max_new_tokens": 2})
    rid = run["id"]
    for path, params in [
        (f"/runs/{rid}/shift", {}),
        (f"/runs/{rid}/heads", {}),
        (f"/runs/{rid}/evolution", {}),
        (f"/runs/{rid}/rollout", {"row": "mean"}),
        (f"/runs/{rid}/rollout", {"row": "3"}),
        (f"/runs/{rid}/flow", {"row": "3"}),
        (f"/runs/{rid}/measure", {}),
        (f"/runs/{rid}/particles", {"layer": 0}),
        (f"/runs/{rid}/fixed-point", {"steps": 3}),
        ("/models/local:mistral/lipschitz", {"layer": 0, "run_id": rid}),
        ("/models/local:mistral/structure", {}),
    ]:
        r = api.get(path, params=params)
        assert r.status_code < 500, (path, r.status_code, r.text)
        assert r.status_code in (200, 404, 422), (path, r.text)
        if r.status_code != 200:
            assert r.json()["detail"], path
    rollout = api.get(f"/runs/{rid}/rollout").json()
    assert len(rollout["values"]) == run["shape"][-1]
