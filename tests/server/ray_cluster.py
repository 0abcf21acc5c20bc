"""A real local Ray cluster for the tests: a head node and a second worker node on this machine.

Both are ``ray start --block`` processes in their own process group, on free ports (every port Ray
would otherwise take by default), with a small object store and no dashboard; ``stop()`` ends those
two process groups (never ``ray stop``, which would end every Ray process on the machine).

Token authentication is on, with a token of the cluster's own: Ray turns it on by itself for a node
started where ``~/.ray/auth_token`` exists (any earlier local ``ray.init()`` writes that file), and a
driver that did not read the same token was then refused ("Authentication token is missing or
incorrect"). The nodes, the drivers this test process starts and its subprocesses all get
``RAY_AUTH_MODE=token`` and ``RAY_AUTH_TOKEN`` while the cluster runs, so the file no longer matters.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]
RAY = str(Path(sys.executable).parent / "ray")
OBJECT_STORE = 100 * 2**20


def _ports() -> list[str]:
    flags = (
        "--node-manager-port",
        "--object-manager-port",
        "--dashboard-agent-listen-port",
        "--dashboard-agent-grpc-port",
        "--runtime-env-agent-port",
        "--metrics-export-port",
    )
    low = free_port()
    return [arg for f in flags for arg in (f, str(free_port()))] + [
        "--min-worker-port",
        str(low),
        "--max-worker-port",
        str(low + 40) if low + 40 < 65535 else str(low),
    ]


def _tail(text: str | bytes | None, chars: int = 1500) -> str:
    """The end of a process's output, for a failure's message (CI shows no files)."""
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    return (text or "")[-chars:]


class _NodeExited(RuntimeError):
    pass


class LocalRayCluster:
    def __init__(self, temp_dir: Path, cpus_per_node: int = 1):
        self.temp_dir = Path(temp_dir)
        self.cpus = cpus_per_node
        self.procs: list[subprocess.Popen] = []
        self.port = free_port()
        # the nodes register as 127.0.0.1; drivers dial the head at 127.0.0.2, another loopback address, because
        # Ray rewrites "127.0.0.1" and "localhost" in an address to the machine's outward IP (the route to 8.8.8.8),
        # which a sandbox need not deliver (CI: the check hung on "Failed to connect to GCS at 192.0.2.2")
        self.address = f"127.0.0.2:{self.port}"
        self.auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
        self._saved_env: dict[str, str | None] = {}

    def _env(self) -> dict:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        env.update(RAY_USAGE_STATS_ENABLED="0", HF_HUB_OFFLINE="1", RAY_DISABLE_IMPORT_WARNING="1")
        env.pop("RAY_AUTH_TOKEN_PATH", None)
        env.update(self.auth)
        return env

    def _use_token_here(self) -> None:
        """This process (the API's Ray driver in the tests) and its children use the cluster's token."""
        for key in (*self.auth, "RAY_AUTH_TOKEN_PATH"):
            self._saved_env[key] = os.environ.get(key)
        os.environ.pop("RAY_AUTH_TOKEN_PATH", None)
        os.environ.update(self.auth)
        if "ray" in sys.modules:  # a loader that read the token sources already reads them again
            from ray._raylet import AuthenticationTokenLoader, Config

            Config.initialize("")
            AuthenticationTokenLoader.instance().reset_cache()

    def _restore_env(self) -> None:
        for key, value in self._saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self._saved_env = {}

    def _start(self, args: list[str], log_name: str) -> None:
        log = open(self.temp_dir / log_name, "wb")  # noqa: SIM115  (closed with the process)
        common = [
            "--num-cpus",
            str(self.cpus),
            "--num-gpus",
            "0",
            "--object-store-memory",
            str(OBJECT_STORE),
            "--disable-usage-stats",
            "--block",
            *_ports(),
        ]
        proc = subprocess.Popen(
            [RAY, "start", *args, *common],
            env=self._env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=ROOT,
        )
        self.procs.append(proc)

    def start(self, timeout: float = 360, attempts: int = 3) -> LocalRayCluster:
        """The head, then the worker node. A node that gives up during start-up (Ray waits a fixed
        30 s for its raylet to register, too short on a loaded machine) is started again."""
        head = [
            "--head",
            "--node-ip-address",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--include-dashboard=false",
            "--dashboard-port",
            str(free_port()),
            "--temp-dir",
            str(self.temp_dir / "ray"),
        ]
        worker = ["--address", self.address, "--node-ip-address", "127.0.0.1"]
        self._use_token_here()
        for nodes, (args, log_name) in enumerate(((head, "head.log"), (worker, "worker.log")), start=1):
            for attempt in range(1, attempts + 1):
                self._start(args, f"{attempt}-{log_name}")
                try:
                    self._wait_nodes(nodes, timeout)
                    break
                except _NodeExited:
                    self.procs.pop().wait()
                    if attempt == attempts:
                        raise
        return self

    def _wait_nodes(self, n: int, timeout: float) -> None:
        deadline = time.time() + timeout
        script = (
            "import ray, sys; ray.init(address=sys.argv[1], log_to_driver=False); "
            "print(sum(1 for x in ray.nodes() if x['Alive']))"
        )
        last = "no check finished"
        while time.time() < deadline:
            for p in self.procs:
                if p.poll() is not None:
                    raise _NodeExited(f"ray start exited with {p.returncode}; see {self.temp_dir}")
            try:
                out = subprocess.run(
                    [sys.executable, "-c", script, self.address],
                    capture_output=True,
                    text=True,
                    env=self._env(),
                    timeout=max(10.0, min(150.0, deadline - time.time())),
                )
            except subprocess.TimeoutExpired as exc:  # one slow check on a loaded machine: try again until the deadline
                last = f"a check ran past {exc.timeout:.0f} s; its stderr ends:\n{_tail(exc.stderr)}"
                continue
            if out.returncode == 0 and out.stdout.strip().splitlines()[-1:] == [str(n)]:
                return
            printed = out.stdout.strip()[-200:]
            last = f"a check exited {out.returncode} printing {printed!r}; its stderr ends:\n{_tail(out.stderr)}"
            time.sleep(1)
        logs = "\n".join(f"--- {f.name}:\n{_tail(f.read_bytes())}" for f in sorted(self.temp_dir.glob("*.log")))
        raise RuntimeError(
            f"the Ray cluster did not reach {n} nodes in {timeout} s (see {self.temp_dir}); {last}\n{logs}"
        )

    def stop(self) -> None:
        self._restore_env()
        for p in reversed(self.procs):  # the worker node first, then the head
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    pass
            try:
                os.killpg(p.pid, signal.SIGKILL)  # whatever of this node's process group is left
            except ProcessLookupError:
                pass
            p.wait(timeout=10)
        self.procs = []
