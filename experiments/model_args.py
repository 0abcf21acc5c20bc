"""The command-line options the model experiments share: ``--model`` (default smollm2), ``--threads``
(torch threads, 0: torch's default) and ``--out`` (a JSON file to write)."""

from __future__ import annotations

import argparse


def parser(doc: str) -> argparse.ArgumentParser:
    """A parser described by ``doc``'s first line, with the shared options."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    ap.add_argument("--out", default="")
    return ap


def parse(ap: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """The parsed options, torch's thread count set when ``--threads`` asks."""
    args = ap.parse_args(argv)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    return args
