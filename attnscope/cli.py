"""``attnscope`` command line: start the API, the dashboard, or both.

    attnscope serve                 # API on :8000 and dashboard on :8050 (127.0.0.1)
    attnscope api --port 8000       # REST API only (FastAPI + uvicorn)
    attnscope dashboard --api-url http://127.0.0.1:8000   # Dash dashboard only
    attnscope census --model minilm --dataset sst2 --n 500 --out results.json
    attnscope probe --model minilm --dataset sst2 --n 300 --out probe.json
    attnscope faithfulness --model minilm-sst2 --dataset movies --n 50 --out results/movies
    attnscope heads --model smollm2 # a decoder's sink, previous-token, duplicate and induction heads

Every option also reads an environment variable (shown in ``--help``) so containers can be
configured without flags.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import subprocess
import sys
import time

log = logging.getLogger("attnscope")


def _env(name: str, default: str) -> str:
    return os.environ.get(name, default)


def _add_api_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default=_env("ATTNSCOPE_API_HOST", "127.0.0.1"), help="bind address (ATTNSCOPE_API_HOST)")
    p.add_argument(
        "--port", type=int, default=int(_env("ATTNSCOPE_API_PORT", "8000")), help="port (ATTNSCOPE_API_PORT)"
    )


def _add_dash_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--dash-host", default=_env("ATTNSCOPE_DASH_HOST", "127.0.0.1"), help="bind address (ATTNSCOPE_DASH_HOST)"
    )
    p.add_argument(
        "--dash-port", type=int, default=int(_env("ATTNSCOPE_DASH_PORT", "8050")), help="port (ATTNSCOPE_DASH_PORT)"
    )
    p.add_argument(
        "--api-url",
        default=_env("ATTNSCOPE_API_URL", ""),
        help="URL of the API the dashboard talks to (ATTNSCOPE_API_URL)",
    )


def run_api(host: str, port: int) -> None:
    import uvicorn

    from attnscope.server.main import create_app

    code = 0
    try:
        uvicorn.run(create_app(), host=host, port=port, log_level="info", timeout_graceful_shutdown=5)
    except SystemExit as stop:  # uvicorn raises the SIGTERM it caught again once it has shut down
        code = stop.code if isinstance(stop.code, int) else 0
    # The app's shutdown has run (executors stopped, database closed). Leave without the interpreter's
    # final garbage collection: with torch and the models' object graphs it took 8-11 s on 2 cores, past
    # the 8 s a container gets to stop on SIGTERM.
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def run_dashboard(api_url: str, host: str, port: int, threads: int = 8) -> None:
    """Serve the dashboard with gunicorn (one process, ``threads`` threads: callbacks wait on the
    API, sometimes for seconds, so several run at once); Flask's server only if gunicorn is absent."""
    from attnscope.frontend.app import create_dash_app

    app = create_dash_app(api_url)
    log.info("dashboard on http://%s:%d (API %s)", host, port, api_url)
    try:
        from gunicorn.app.base import BaseApplication
    except ImportError:  # pragma: no cover - gunicorn is a dependency; kept for stripped installs
        app.run(host=host, port=port, debug=False, threaded=True)
        return

    class _Dashboard(BaseApplication):
        def load_config(self) -> None:
            for key, value in {
                "bind": f"{host}:{port}",
                "workers": 1,
                "worker_class": "gthread",
                "threads": threads,
                "timeout": 600,
                "graceful_timeout": 2,  # a stop (SIGTERM) waits at most 2 s for callbacks in flight
                "accesslog": None,
                "errorlog": "-",
                "loglevel": "warning",
            }.items():
                self.cfg.set(key, value)

        def load(self):
            return app.server

    _Dashboard().run()


def _serve(args: argparse.Namespace) -> int:
    """API in a child process, dashboard in this one; both stop together."""
    api_url = args.api_url or f"http://{args.host}:{args.port}"
    api = subprocess.Popen(
        [sys.executable, "-m", "attnscope.cli", "api", "--host", args.host, "--port", str(args.port)]
    )
    try:
        import httpx

        deadline = time.time() + 300
        while time.time() < deadline:
            if api.poll() is not None:
                log.error("the API process exited with code %s", api.returncode)
                return 1
            try:
                if httpx.get(f"{api_url}/api/v1/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        sys.stdout.write(
            f"\n  attnscope API        {api_url}/api/v1   (docs: {api_url}/docs)\n"
            f"  attnscope dashboard  http://{args.dash_host}:{args.dash_port}/\n\n"
        )
        sys.stdout.flush()
        run_dashboard(api_url, args.dash_host, args.dash_port)
        return 0
    finally:
        api.send_signal(signal.SIGTERM)
        try:
            api.wait(timeout=10)
        except subprocess.TimeoutExpired:
            api.kill()


def _add_executor_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--executor",
        default="in-process",
        choices=["in-process", "ray"],
        help="ray: shards run as Ray tasks on actors that hold the model (pip install 'attnscope[ray]')",
    )
    p.add_argument(
        "--ray-address",
        default=_env("ATTNSCOPE_RAY_ADDRESS", ""),
        help="Ray cluster (host:6379) for --executor ray; empty: a local Ray on this machine (ATTNSCOPE_RAY_ADDRESS)",
    )
    p.add_argument(
        "--ray-workers",
        type=int,
        default=int(_env("ATTNSCOPE_RAY_WORKERS", "2")),
        help="Ray actors, each holding the model (ATTNSCOPE_RAY_WORKERS)",
    )
    p.add_argument(
        "--ray-threads",
        type=int,
        default=int(_env("ATTNSCOPE_RAY_THREADS", "0")),
        help="torch threads per actor; 0: as many as this process uses (ATTNSCOPE_RAY_THREADS)",
    )


def _on_ray(kind_name: str, params: dict, args: argparse.Namespace, progress) -> dict | None:
    """The job kind's result computed on Ray: the same shards and merge as the API's job with these
    params (so the same result). None (after logging why) when the params or the cluster are wrong."""
    from pydantic import ValidationError

    from attnscope.server.executors import run_kind
    from attnscope.server.job_kinds import register_job_kinds
    from attnscope.server.jobs import JOB_KINDS
    from attnscope.server.ray_executor import RayExecutor, RayUnavailableError

    register_job_kinds()
    kind = JOB_KINDS[kind_name]
    try:
        checked = kind.validate(params)
        executor = RayExecutor(
            args.ray_address or None,
            workers=args.ray_workers,
            device=getattr(args, "device", None),
            threads=args.ray_threads or None,
        )
    except (ValidationError, RayUnavailableError, ValueError) as exc:
        log.error("%s", exc)
        return None
    try:
        return run_kind(kind, checked, executor, progress)
    finally:
        executor.close()


def _dataset_job(args: argparse.Namespace) -> int:
    """``census`` / ``probe`` from the command line, with a progress bar; JSON and CSV out."""
    import json
    from pathlib import Path

    from tqdm import tqdm

    from attnscope.models.loading import load_model
    from attnscope.pipelines.dataset_runs import run_census, run_probe
    from attnscope.server.jobs import rows_to_csv

    with tqdm(total=args.n, desc=f"{args.command} {args.model} on {args.dataset}", unit="ex") as bar:

        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        params = {"model": args.model, "dataset": args.dataset, "n": args.n, "split": args.split, "seed": args.seed}
        if args.executor == "ray":
            if args.command == "probe":
                params["classifier"] = args.classifier
            result = _on_ray(args.command, params, args, progress)
            if result is None:
                return 2
        elif args.command == "census":
            result = run_census(
                load_model(args.model, args.device), args.dataset, args.n, args.split, args.seed, progress
            )
        else:
            result = run_probe(
                load_model(args.model, args.device),
                args.dataset,
                args.n,
                args.split,
                args.seed,
                progress=progress,
                classifier=args.classifier,
            )
    out = Path(args.out)
    out.write_text(json.dumps(result, indent=1))
    csv_path = out.with_suffix(".csv")
    csv_path.write_text(rows_to_csv(result["rows"]))
    sys.stdout.write(f"wrote {out} and {csv_path} ({result['n']} examples)\n")
    return 0


def _add_faithfulness_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default="minilm-sst2", help="a classifier from the registry")
    p.add_argument("--dataset", default="movies", choices=["sst2", "movies", "hatexplain"])
    p.add_argument(
        "--split", default=None, help="sst2: dev|train; movies: rationales|fold10; hatexplain: test|validation"
    )
    p.add_argument("--explainers", nargs="+", default=None, help="explainer names (default: all but flow/occlusion)")
    p.add_argument("--metrics", nargs="+", default=None, help="metric names (default: all)")
    p.add_argument("--n", type=int, default=200, help="number of examples")
    p.add_argument("--start", type=int, default=0, help="index of the first example")
    p.add_argument("--convention", default="eraser", choices=["eraser", "eraser-paper", "ferret"])
    p.add_argument("--removal", default=None, choices=["delete", "mask"])
    p.add_argument(
        "--count",
        default=None,
        choices=["eraser-code", "ceil", "ferret"],
        help="counting rule for k%% of the tokens (default: the convention's; eraser: eraser-code)",
    )
    p.add_argument("--k", type=float, default=None, help="hard-rationale fraction (default: per data set)")
    p.add_argument("--max-tokens", type=int, default=None, help="truncate inputs (default: model limit)")
    p.add_argument("--ig-steps", type=int, default=None, help="integrated gradients steps (default 32)")
    p.add_argument("--allow-offensive", action="store_true", help="opt in to HateXplain (offensive text)")
    p.add_argument("--out", required=True, help="output path without extension: writes OUT.json and OUT.csv")
    _add_executor_args(p)


def run_faithfulness(args: argparse.Namespace) -> int:
    """Dataset-level faithfulness table, with a progress bar; writes JSON and CSV."""

    from tqdm import tqdm

    from attnscope.models.loading import load_model
    from attnscope.pipelines.explainers import DEFAULT_EXPLAINERS
    from attnscope.pipelines.faithfulness_eval import METRICS
    from attnscope.pipelines.faithfulness_shards import evaluate_dataset

    options = {"integrated_gradients": {"n_steps": args.ig_steps}} if args.ig_steps else {}
    bar = tqdm(total=args.n, desc=f"faithfulness {args.dataset}", unit="example")

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.update(done - bar.n)

    if args.executor == "ray":
        params = {
            "model": args.model,
            "dataset": args.dataset,
            "split": args.split,
            "explainers": args.explainers or list(DEFAULT_EXPLAINERS),
            "metrics": args.metrics or list(METRICS),
            "n": args.n,
            "start": args.start,
            "convention": args.convention,
            "removal": args.removal,
            "count": args.count,
            "k": args.k,
            "max_tokens": args.max_tokens,
            "allow_offensive": args.allow_offensive,
            "options": options,
        }
        try:
            result = _on_ray("faithfulness", params, args, progress)
        finally:
            bar.close()
        if result is None:
            return 2
        return _write_faithfulness(args, result)
    try:
        result = evaluate_dataset(
            load_model(args.model),
            args.dataset,
            args.explainers or list(DEFAULT_EXPLAINERS),
            n=args.n,
            convention=args.convention,
            removal=args.removal,
            count=args.count,
            k=args.k,
            metrics=args.metrics or list(METRICS),
            max_tokens=args.max_tokens,
            split=args.split,
            start=args.start,
            allow_offensive=args.allow_offensive,
            options=options,
            progress=progress,
        )
    finally:
        bar.close()
    return _write_faithfulness(args, result)


def _write_faithfulness(args: argparse.Namespace, result: dict) -> int:
    import json
    from pathlib import Path

    from attnscope.server.jobs import rows_to_csv

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    out.with_suffix(".csv").write_text(rows_to_csv(result["rows"]))
    log.info(
        "wrote %s and %s (accuracy %.3f on %d examples)",
        out.with_suffix(".json"),
        out.with_suffix(".csv"),
        result["accuracy"],
        result["n"],
    )
    return 0


def run_heads(args: argparse.Namespace) -> int:
    """A causal LM's sink / previous-token / duplicate / induction heads as Markdown (and JSON)."""
    import json
    from pathlib import Path

    from attnscope.models.loading import load_model
    from attnscope.pipelines.decoder_heads import decoder_heads, markdown

    loaded = load_model(args.model, args.device)
    report = decoder_heads(loaded, half=args.half, seeds=range(args.seeds), top=args.top)
    sys.stdout.write(markdown(report) + "\n")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    return 0


def run_head_effects(args: argparse.Namespace) -> int:
    """Per-head effect grids: over a data set (JSON + CSV), on one ``--text``, or the induction test."""
    import json
    from pathlib import Path

    from attnscope.models.loading import load_model
    from attnscope.server.jobs import rows_to_csv

    loaded = load_model(args.model, args.device)
    if args.induction:
        from attnscope.pipelines.interventions.induction import induction_ablation

        report = induction_ablation(loaded, k=args.k, n_random=args.random_sets, method=args.method)
    elif args.text:
        from attnscope.analysis.interventions import top_heads
        from attnscope.pipelines.interventions import MetricSpec, head_effects

        inp = loaded.encode_text(args.text)
        res = head_effects(loaded, inp, args.method, MetricSpec(args.metric), chunk=args.chunk)
        report = {
            "model": args.model,
            "tokens": len(inp),
            "metric": res["metric"].kind,
            "effect": res["effect"].tolist(),
            "top": [{"layer": a, "head": b, "effect": e} for a, b, e in top_heads(res["effect"], 10)],
        }
    else:
        from tqdm import tqdm

        from attnscope.pipelines.dataset_runs import pick_examples
        from attnscope.pipelines.interventions.dataset import grid_shard, merge_grids

        examples = pick_examples(args.dataset, args.n, args.split, args.seed)
        with tqdm(total=len(examples), desc=f"head-effects {args.model} on {args.dataset}", unit="ex") as bar:

            def progress(done: int, total: int) -> None:
                bar.update(done - bar.n)

            part = grid_shard(
                loaded, examples, args.method, args.metric, args.max_tokens, args.chunk, progress=progress
            )
        report = merge_grids([part], args.model, args.method, args.dataset)
    text = json.dumps(report, indent=1)
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n")
        if "rows" in report:
            out.with_suffix(".csv").write_text(rows_to_csv(report["rows"]))
        sys.stdout.write(f"wrote {out}\n")
    else:
        sys.stdout.write(text + "\n")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="attnscope", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_serve = sub.add_parser("serve", help="start the API and the dashboard on localhost")
    _add_api_args(p_serve)
    _add_dash_args(p_serve)
    p_api = sub.add_parser("api", help="start the REST API")
    _add_api_args(p_api)
    p_dash = sub.add_parser("dashboard", help="start the dashboard (talks to the API over HTTP)")
    _add_dash_args(p_dash)
    for name, what in (
        ("census", "per-head statistics over a data set"),
        ("probe", "per-layer accuracy of predicting the label from the maps alone"),
    ):
        p = sub.add_parser(name, help=what)
        p.add_argument("--model", default="minilm")
        p.add_argument("--dataset", default="sst2", choices=["sst2", "movies"])
        p.add_argument("--n", type=int, default=200)
        p.add_argument("--split", default=None)
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--device", default=None)
        p.add_argument("--out", default=f"{name}.json", help="JSON path; the CSV goes beside it")
        _add_executor_args(p)
        if name == "probe":
            p.add_argument(
                "--classifier",
                default="logistic",
                choices=["logistic", "cnn"],
                help="logistic regression on the flattened maps, or a 2-layer CNN (one channel per head)",
            )
    p_faith = sub.add_parser("faithfulness", help="ERASER faithfulness + plausibility table over a data set")
    _add_faithfulness_args(p_faith)
    p_heads = sub.add_parser("heads", help="a causal LM's sink, previous-token, duplicate and induction heads")
    p_heads.add_argument("--model", default="smollm2")
    p_heads.add_argument("--half", type=int, default=30, help="random tokens per copy of the probe")
    p_heads.add_argument("--seeds", type=int, default=5, help="probe seeds 0..N-1")
    p_heads.add_argument("--top", type=int, default=5, help="heads listed per kind")
    p_heads.add_argument("--device", default=None)
    p_heads.add_argument("--out", default="", help="also write the report as JSON")
    p_fx = sub.add_parser("head-effects", help="per-head ablation effects (causal tests of heads)")
    p_fx.add_argument("--model", default="minilm-sst2")
    p_fx.add_argument("--dataset", default="sst2", choices=["sst2", "movies"])
    p_fx.add_argument("--n", type=int, default=50, help="examples (a seeded sample of the split)")
    p_fx.add_argument("--split", default=None)
    p_fx.add_argument("--seed", type=int, default=0)
    p_fx.add_argument("--method", default="zero", choices=["zero", "mean", "uniform"])
    p_fx.add_argument("--metric", default=None, help="prob, logit_diff, flip, cosine or loss (default: the task's)")
    p_fx.add_argument("--max-tokens", type=int, default=64, help="texts are cut to this many tokens")
    p_fx.add_argument("--chunk", type=int, default=32, help="copies of an input per batched forward pass")
    p_fx.add_argument("--text", default="", help="one text instead of a data set")
    p_fx.add_argument(
        "--induction", action="store_true", help="causal LMs: top-k induction heads vs random k-sets on the probe"
    )
    p_fx.add_argument("--k", type=int, default=5, help="--induction: heads per set")
    p_fx.add_argument("--random-sets", type=int, default=20, help="--induction: random sets")
    p_fx.add_argument("--device", default=None)
    p_fx.add_argument("--out", default="", help="JSON path (a CSV of the per-head rows goes beside it)")
    return parser


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    args = build_parser().parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # stop at once on SIGTERM (containers)
    if args.command == "serve":
        return _serve(args)
    if args.command == "api":
        run_api(args.host, args.port)
        return 0
    if args.command in ("census", "probe"):
        return _dataset_job(args)
    if args.command == "faithfulness":
        return run_faithfulness(args)
    if args.command == "heads":
        return run_heads(args)
    if args.command == "head-effects":
        return run_head_effects(args)
    if args.command == "dashboard":
        run_dashboard(args.api_url or "http://127.0.0.1:8000", args.dash_host, args.dash_port)
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
