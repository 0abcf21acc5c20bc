"""``attnscope data fetch | verify | list`` (``attnscope.models.data_fetch``): from a folder, from archives,
over HTTP (a loopback server), and the clear errors of a corrupt, incomplete or unreachable source.

The registry's own checksums are those of the full sets; these tests give the same code registry entries
whose files are the committed fixtures (``tests/fixtures/data``), so they run in any clone."""

import functools
import http.server
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import threading
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from attnscope.models import data_fetch
from attnscope.models.data_registry import DATASETS, DataFile

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "data"


def _fixture_sets():
    """The registered sets with the fixtures' files, sizes and checksums in place of the full ones."""
    out = []
    for d in DATASETS.values():
        files = sorted(p for p in (FIXTURES / d.name).rglob("*") if p.is_file())
        rows = [
            DataFile(p.relative_to(FIXTURES / d.name).as_posix(), p.stat().st_size, data_fetch.sha256(p)) for p in files
        ]
        out.append(replace(d, files=tuple(rows)))
    return out


SETS = _fixture_sets()
N_FILES = sum(len(d.files) for d in SETS)


def test_fetch_from_a_folder_verifies_and_a_second_fetch_copies_nothing(tmp_path):
    lines = []
    report = data_fetch.fetch(SETS, str(FIXTURES), tmp_path / "data", progress=lines.append)
    assert report.copied == N_FILES and report.kept == 0
    assert data_fetch.verify(SETS, tmp_path / "data") == {d.name: [] for d in SETS}
    assert [line.split(":")[0] for line in lines] == [d.name for d in SETS] and "verified" in lines[0]
    again = data_fetch.fetch(SETS, str(FIXTURES), tmp_path / "data")
    assert again.copied == 0 and again.kept == N_FILES
    # the real registry sees these cuts as present, not complete, and verify names what differs
    assert all(d.present(tmp_path / "data") and not d.complete(tmp_path / "data") for d in DATASETS.values())
    assert "dev.tsv" in data_fetch.verify([DATASETS["sst2"]], tmp_path / "data")["sst2"]


def test_fetched_files_are_readable_by_others_and_a_kept_0600_file_is_repaired(tmp_path):
    """The container's non-root user reads the data folder mounted read-only: files must not be 0600."""
    root = tmp_path / "data"
    data_fetch.fetch(SETS, str(FIXTURES), root)
    files = [d.folder(root) / f.path for d in SETS for f in d.files]
    assert files and all(p.stat().st_mode & 0o044 == 0o044 for p in files)
    files[0].chmod(0o600)  # what the earlier fetch (mkstemp's mode) left
    assert data_fetch.fetch(SETS, str(FIXTURES), root).kept == N_FILES
    assert files[0].stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize("kind", ["tar.gz", "zip"])
def test_fetch_from_an_archive_with_a_top_folder(tmp_path, kind):
    archive = tmp_path / f"data.{kind}"
    if kind == "zip":
        with zipfile.ZipFile(archive, "w") as z:
            for p in FIXTURES.rglob("*"):
                z.write(p, Path("attnscope-data") / p.relative_to(FIXTURES))
    else:
        with tarfile.open(archive, "w:gz") as t:
            t.add(FIXTURES, arcname="attnscope-data")
    report = data_fetch.fetch(SETS, str(archive), tmp_path / "data")
    assert report.copied == N_FILES and not any(data_fetch.verify(SETS, tmp_path / "data").values())


def test_a_corrupt_or_incomplete_source_fails_naming_the_file_and_leaves_nothing_half_written(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(FIXTURES, src)
    dev = src / "sst2" / "dev.tsv"
    dev.write_bytes(dev.read_bytes().replace(b"\t1\n", b"\t0\n", 1))
    with pytest.raises(data_fetch.FetchError, match="sst2/dev.tsv does not match the registry"):
        data_fetch.fetch(SETS, str(src), tmp_path / "data")
    assert not (tmp_path / "data" / "sst2" / "dev.tsv").exists()
    assert not list((tmp_path / "data").rglob("*.part"))
    dev.unlink()
    with pytest.raises(data_fetch.FetchError, match="sst2/dev.tsv is not in the source"):
        data_fetch.fetch(SETS, str(src), tmp_path / "data")
    with pytest.raises(data_fetch.FetchError, match="neither a folder nor an archive"):
        data_fetch.fetch(SETS, str(tmp_path / "nope"), tmp_path / "data")


@pytest.fixture
def http_fixtures():
    """The fixtures folder served over HTTP on a loopback port (what the pinned addresses serve)."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(FIXTURES))
    handler.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_download_over_http_verifies_every_file(tmp_path, http_fixtures):
    report = data_fetch.fetch(SETS, None, tmp_path / "data", url_for=lambda d, f: f"{http_fixtures}/{d.name}/{f.path}")
    assert report.copied == N_FILES and not any(data_fetch.verify(SETS, tmp_path / "data").values())
    wrong = [replace(SETS[0], files=(replace(SETS[0].files[0], sha256="0" * 64),))]
    with pytest.raises(data_fetch.FetchError, match="does not match the registry"):
        data_fetch.fetch(wrong, None, tmp_path / "other", url_for=lambda d, f: f"{http_fixtures}/{d.name}/{f.path}")


def test_offline_the_download_fails_at_once_with_the_settings_to_use(tmp_path):
    with socket.socket() as s:  # a loopback port nobody listens on: refused at once, like a machine offline
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(data_fetch.FetchError) as err:
        data_fetch.fetch(SETS[:1], None, tmp_path, timeout=60, url_for=lambda d, f: f"http://127.0.0.1:{port}/{f.path}")
    # refused at once (never a timeout waited out), and the message says what to do instead
    assert isinstance(err.value.__cause__.reason, ConnectionRefusedError), err.value.__cause__
    assert "offline?" in str(err.value) and "ATTNSCOPE_DATA_SOURCE" in str(err.value)
    assert not list(tmp_path.rglob("*.part"))


def _cli(*args, **env):
    environ = {k: v for k, v in os.environ.items() if k != "ATTNSCOPE_DATA_SOURCE"} | env
    return subprocess.run(
        [sys.executable, "-m", "attnscope.cli", "data", *args], capture_output=True, text=True, env=environ, timeout=600
    )


def test_the_command_lists_verifies_and_reports_a_bad_source(tmp_path):
    listed = _cli("list", "--dir", str(FIXTURES))
    assert listed.returncode == 0 and listed.stdout.count("present (a cut)") == len(DATASETS), listed.stdout
    verified = _cli("verify", "sst2", "--dir", str(FIXTURES))
    assert verified.returncode == 1 and "files missing or changed" in verified.stdout
    bad = _cli("fetch", "--dir", str(tmp_path), "--source", str(tmp_path / "nope"))
    assert bad.returncode == 1 and "neither a folder nor an archive" in bad.stdout
    unknown = _cli("verify", "imdb", "--dir", str(tmp_path))
    assert unknown.returncode == 2 and "unknown data set 'imdb'" in unknown.stdout


@pytest.mark.skipif(not all(d.complete() for d in DATASETS.values()), reason="the full data sets: make data")
def test_the_command_fetches_the_full_sets_from_a_folder(tmp_path):
    from attnscope.models.data_registry import data_dir

    out = _cli("fetch", "--dir", str(tmp_path), ATTNSCOPE_DATA_SOURCE=str(data_dir()))
    assert out.returncode == 0 and "2007 files copied" in out.stdout, out.stdout
    assert _cli("verify", "--dir", str(tmp_path)).stdout.count("verified") == len(DATASETS)
    assert "0 files copied" in _cli("fetch", "--dir", str(tmp_path), "--source", str(data_dir())).stdout
