"""``attnscope data list | fetch | verify``: the registered data sets in the data folder.

attnscope data list                      # each set: present or missing, size, licence
attnscope data fetch                     # every set, from ATTNSCOPE_DATA_SOURCE or the pinned addresses
attnscope data fetch sst2 --source /path/to/data-or-archive.tar.gz
attnscope data verify                    # every file's sha256 against the registry; exit 1 on a mismatch
"""

from __future__ import annotations

import argparse
import sys
import time

from attnscope.cli.common import settings


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from attnscope.models import data_fetch, data_registry

    root = Path(args.dir).expanduser() if args.dir else data_registry.data_dir()
    names = args.names or list(data_registry.DATASETS)
    for name in names:
        if name not in data_registry.DATASETS:
            _say(f"unknown data set {name!r}; known: {', '.join(data_registry.DATASETS)}")
            return 2
    sets = [data_registry.DATASETS[n] for n in names]
    if args.action == "list":
        _say(f"data folder: {root}")
        for name in names:
            d = data_registry.DATASETS[name]
            state = "complete" if d.complete(root) else "present (a cut)" if d.present(root) else "missing"
            licence = d.licence.split(". ")[0]
            _say(f"  {name:26} {state:16} {len(d.files):5} files {d.size / 1e6:6.1f} MB  {licence}")
        return 0
    if args.action == "verify":
        bad = data_fetch.verify(sets, root)
        for name in names:
            wrong = bad[name]
            _say(f"{name}: " + (f"{len(wrong)} files missing or changed, e.g. {wrong[0]}" if wrong else "verified"))
        return 1 if any(bad.values()) else 0
    source = args.source or None
    start = time.perf_counter()
    _say(f"fetching {', '.join(names)} into {root} from {source or 'the pinned download addresses'}")
    try:
        report = data_fetch.fetch(sets, source, root, progress=_say, timeout=args.timeout)
    except data_fetch.FetchError as exc:
        _say(f"error: {exc}")
        return 1
    took = time.perf_counter() - start
    copied = f"{report.copied} files copied ({report.bytes / 1e6:.1f} MB)"
    _say(f"done in {took:.1f} s: {copied}, {report.kept} already there; all verified")
    return 0


def add_parsers(sub) -> None:
    """``data`` with its actions."""
    p = sub.add_parser("data", help="list, fetch or verify the data sets (docs/guide/data.md)")
    p.add_argument("action", choices=["list", "fetch", "verify"])
    p.add_argument("names", nargs="*", help="data sets (default: all)")
    p.add_argument("--dir", default=None, help="the data folder (default: ATTNSCOPE_DATA_DIR, else the user's)")
    p.add_argument(
        "--source",
        default=settings().data_source,
        help="a folder or archive (.tar, .tar.gz, .zip) holding the data sets' folders; empty: download from "
        "the pinned addresses (ATTNSCOPE_DATA_SOURCE)",
    )
    p.add_argument("--timeout", type=float, default=30.0, help="seconds to wait on each download")
