"""``attnscope`` command line: start the API, the dashboard, or both.

    attnscope serve                 # API on :8000 and dashboard on :8050 (127.0.0.1)
    attnscope api --port 8000       # REST API only (FastAPI + uvicorn)
    attnscope dashboard --api-url http://127.0.0.1:8000   # Dash dashboard only
    attnscope census --model minilm --dataset sst2 --n 500 --out results.json
    attnscope probe --model minilm --dataset sst2 --n 300 --out probe.json
    attnscope faithfulness --model minilm-sst2 --dataset movies --n 50 --out results/movies
    attnscope heads --model smollm2 # a decoder's sink, previous-token, duplicate and induction heads
    attnscope data fetch            # the data sets into the data folder (list, verify: docs/guide/data.md)
    attnscope qk-induction --model smollm2 --out results/qk/smollm2-induction.json   # why they attend
    attnscope lens --text "The capital of France is" --target " Paris"   # the logit lens, layer by layer
    attnscope attribute --text "The capital of France is"   # which heads and MLPs write the next token
    attnscope dla --model smollm2 --dataset sst2 --n 100 --out dla.json   # each head's DLA over a data set
    attnscope graph --text "The capital of France is" --out graph.json   # the contribution graph (JSON)
    attnscope circuit --clean "The capital of France is" --corrupted "The capital of Italy is" \
        --answer " Paris" --wrong " Rome" --check 20   # EAP circuit, faithfulness, exact re-check

Every option also reads an environment variable (shown in ``--help``; read through the server's
``Settings``) so containers can be configured without flags.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys

from pydantic import ValidationError

from attnscope.cli import circuits, data, datasets, dla, faithfulness, heads, serve, writes

# each subcommand's module: its parsers and what runs them
_COMMANDS = {
    "serve": serve,
    "api": serve,
    "dashboard": serve,
    "census": datasets,
    "probe": datasets,
    "faithfulness": faithfulness,
    "heads": heads,
    "head-effects": heads,
    "data": data,
    "qk-induction": heads,
    "lens": writes,
    "attribute": writes,
    "graph": writes,
    "circuit": circuits,
    "dla": dla,
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="attnscope", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for module in dict.fromkeys(_COMMANDS.values()):
        module.add_parsers(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        parser = build_parser()
    except ValidationError as exc:  # a malformed ATTNSCOPE_* variable: name it, without a traceback
        sys.stderr.write(f"attnscope: a setting is malformed: {exc}\n")
        return 2
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # stop at once on SIGTERM (containers)
    return _COMMANDS[args.command].run(args)
