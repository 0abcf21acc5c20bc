"""Fill the data folder with the registered data sets and check them (``attnscope data fetch | verify``).

A source is a local folder laid out like the data folder (``sst2/dev.tsv``, ...), an archive of one
(``.tar``, ``.tar.gz``/``.tgz``, ``.zip``; one top-level folder above the sets is allowed), or, when none is
given, the pinned download address of every file (``DataSet.url``). Every file is written to a temporary
name, its sha256 checked against the registry, then moved into place; a file already there with the right
checksum is left alone, so a second fetch copies nothing. ``ATTNSCOPE_DATA_SOURCE`` names the source
(read by the command line).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from attnscope.models.data_registry import DATASETS, DataFile, DataSet, data_dir

SOURCE_ENV = "ATTNSCOPE_DATA_SOURCE"
CHUNK = 1 << 20
READABLE = 0o644  # data files are for every reader: a container's non-root user reads the folder mounted read-only

Progress = Callable[[str], None]


class FetchError(RuntimeError):
    """A file could not be fetched, or arrived with the wrong checksum."""


@dataclass
class Report:
    """What one fetch did: files ``copied`` and ``kept`` (already right), bytes copied."""

    copied: int = 0
    kept: int = 0
    bytes: int = 0


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def is_good(path: Path, file: DataFile) -> bool:
    """``path`` holds exactly ``file`` (size first: cheap; then the checksum)."""
    try:
        return path.stat().st_size == file.size and sha256(path) == file.sha256
    except OSError:
        return False


def verify(sets: Iterable[DataSet] | None = None, root: Path | None = None) -> dict[str, list[str]]:
    """Data set name -> its files that are missing or differ from the registry (empty list: verified)."""
    root = root or data_dir()
    return {ds.name: [f.path for f in ds.files if not is_good(ds.folder(root) / f.path, f)] for ds in _sets(sets)}


def fetch(
    sets: Iterable[DataSet] | None = None,
    source: str | None = None,
    root: Path | None = None,
    progress: Progress = lambda line: None,
    timeout: float = 30.0,
    url_for: Callable[[DataSet, DataFile], str] | None = None,
) -> Report:
    """Put data ``sets`` (default: every registered one) into ``root`` (default: the data folder).

    ``source``: a folder, an archive, or None: download each file from ``url_for(set, file)`` (default
    ``DataSet.url``, the pinned mirror). Raises ``FetchError`` naming the file and what to do when a file
    is missing from the source, unreachable or corrupt; files already verified stay.
    """
    root = root or data_dir()
    report = Report()
    with _opened(source) as base:
        for ds in _sets(sets):
            copied_before = report.copied
            for file in ds.files:
                dest = ds.folder(root) / file.path
                if is_good(dest, file):
                    _readable(dest)
                    report.kept += 1
                    continue
                dest.parent.mkdir(parents=True, exist_ok=True)
                url = None if base is not None else (url_for or DataSet.url)(ds, file)
                _put(ds, file, dest, base, url, timeout)
                report.copied += 1
                report.bytes += file.size
            new = report.copied - copied_before
            progress(f"{ds.name}: {len(ds.files)} files, {ds.size / 1e6:.1f} MB verified ({new} copied)")
    return report


def _sets(sets: Iterable[DataSet] | None) -> list[DataSet]:
    return list(DATASETS.values()) if sets is None else list(sets)


def _readable(path: Path) -> None:
    """Give a kept file read access for all (an earlier fetch wrote data files 0600), when it is ours."""
    st = path.stat()
    if st.st_mode & 0o044 != 0o044 and st.st_uid == os.getuid():
        os.chmod(path, (st.st_mode & 0o777) | 0o644)


def _put(ds: DataSet, file: DataFile, dest: Path, base: Path | None, url: str | None, timeout: float) -> None:
    """Copy or download ``file`` next to ``dest``, check it, move it into place."""
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            if base is not None:
                src = base / ds.name / file.path
                if not src.is_file():
                    raise FetchError(f"{ds.name}/{file.path} is not in the source {base}")
                with src.open("rb") as f:
                    shutil.copyfileobj(f, out, CHUNK)
            else:
                _download(url, out, timeout)
        if not is_good(tmp, file):
            raise FetchError(
                f"{ds.name}/{file.path} does not match the registry (size {file.size}, sha256 {file.sha256[:12]}...)"
            )
        # mkstemp makes the file 0600; a data file is for every reader (e.g. a container's non-root user
        # reading the folder mounted read-only), so give it the mode an ordinary new file gets.
        os.chmod(tmp, READABLE)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)


def _download(url: str, out, timeout: float) -> None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 (https addresses from the registry)
            shutil.copyfileobj(r, out, CHUNK)
    except (urllib.error.URLError, OSError) as exc:
        raise FetchError(
            f"could not download {url} ({exc}); offline? Give a local copy with {SOURCE_ENV}=FOLDER_OR_ARCHIVE "
            "(or --source) or set ATTNSCOPE_DATA_DIR to a folder that holds the data sets"
        ) from exc


@contextmanager
def _opened(source: str | None):
    """The folder holding the data sets' folders: ``source`` itself, or an archive unpacked to a temporary one."""
    if source is None:
        yield None
        return
    path = Path(source).expanduser()
    if path.is_dir():
        yield _sets_folder(path)
        return
    if not path.is_file():
        raise FetchError(f"the data source {source} is neither a folder nor an archive")
    with tempfile.TemporaryDirectory(prefix="attnscope-data-") as tmp:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as z:
                z.extractall(tmp)
        elif tarfile.is_tarfile(path):
            with tarfile.open(path) as t:
                t.extractall(tmp, filter="data")
        else:
            raise FetchError(f"the data source {source} is not a folder, a tar or a zip archive")
        yield _sets_folder(Path(tmp))


def _sets_folder(path: Path) -> Path:
    """``path``, or its single sub-folder when the data sets sit one level down (``data/sst2/...``)."""
    if any((path / name).is_dir() for name in DATASETS):
        return path
    subs = [p for p in path.iterdir() if p.is_dir()]
    return subs[0] if len(subs) == 1 else path
