"""The data sets the project uses, in one table: files (size, sha256), source, licence, use; and the one data folder.

Every reader (``attnscope.models.zoo.data`` for MNIST and SST-2 arrays, ``attnscope.pipelines.datasets`` for
labelled text with rationales) finds its files through ``data_dir()`` / ``require()`` here, so "found" means
the same everywhere. The files' sizes and checksums live in ``data_files.json`` beside this module (the movie
reviews alone are 2,000 files); ``attnscope data fetch`` (``attnscope.models.data_fetch``) fills the folder and
``attnscope data verify`` checks it. docs/guide/data.md is the page for users.

The folder is ``ATTNSCOPE_DATA_DIR`` (read here and nowhere else), else ``$XDG_DATA_HOME/attnscope/data``
(``~/.local/share/attnscope/data``). Nothing falls back to another folder: a data set that is not there is
reported missing with the command that fetches it. The test suite points the setting at small committed
fixtures (``tests/fixtures/data``, same formats) when the full sets are not there.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path

from attnscope.models.settings import model_settings

DATA_DIR_ENV = "ATTNSCOPE_DATA_DIR"  # the variable's name, for messages (read by ModelSettings)
FETCH_COMMAND = "attnscope data fetch"  # `make data` runs it


@dataclass(frozen=True)
class DataFile:
    """One file of a data set: ``path`` inside the set's folder, its ``size`` in bytes and ``sha256``."""

    path: str
    size: int
    sha256: str


@dataclass(frozen=True)
class DataSet:
    """A data set: its folder name, where it comes from, its licence and what the project uses it for.

    ``key`` is the name jobs and routes use for it (``movies``, ``mnist``). ``mirror`` is the GitHub
    repository the files are downloaded from, pinned to ``commit`` (``mirror_paths`` maps a local file name
    to its path there: ``{"": prefix}`` or exact names); ``origin`` is the authors' canonical release, which
    the mirror copies byte for byte where the README says so.
    """

    name: str
    key: str  # what jobs and routes call it (``dataset="movies"``)
    title: str
    origin: str
    version: str
    licence: str
    used_for: str
    mirror: str
    commit: str
    mirror_paths: tuple[tuple[str, str], ...]
    files: tuple[DataFile, ...] = ()
    offensive: bool = False
    # what "present" needs, as globs each matching a file, when not every file (the fixtures keep a few reviews)
    present_globs: tuple[str, ...] = ()

    @property
    def size(self) -> int:
        """Bytes of all its files."""
        return sum(f.size for f in self.files)

    def url(self, file: DataFile) -> str:
        """The pinned download address of ``file`` (raw file of the mirror at its commit)."""
        mapping = dict(self.mirror_paths)
        remote = mapping.get(file.path) or mapping.get("", "") + file.path
        return f"https://raw.githubusercontent.com/{self.mirror}/{self.commit}/{remote}"

    def folder(self, root: Path | None = None) -> Path:
        return (root or data_dir()) / self.name

    def present(self, root: Path | None = None) -> bool:
        """Every file (or a match of each of ``present_globs``) is there, of any size: the test fixtures are
        smaller cuts of the same files. A job on the set can start."""
        folder = self.folder(root)
        if self.present_globs:
            return all(any(folder.glob(g)) for g in self.present_globs)
        return all((folder / f.path).is_file() for f in self.files)

    def complete(self, root: Path | None = None) -> bool:
        """Every file is there with the registered size (``verify`` also checks the sha256)."""
        folder = self.folder(root)
        return all(_size(folder / f.path) == f.size for f in self.files)


MOVIES = "movie-rationales-zaidan"


def _manifest() -> dict[str, tuple[DataFile, ...]]:
    """``{data set: files}`` from ``data_files.json`` (``{name: {path: [size, sha256]}}``, computed from the
    released files)."""
    raw = json.loads((Path(__file__).with_name("data_files.json")).read_text(encoding="utf-8"))
    return {name: tuple(DataFile(p, s, h) for p, (s, h) in sorted(files.items())) for name, files in raw.items()}


_FILES = _manifest()
DATASETS: dict[str, DataSet] = {
    d.name: replace(d, files=_FILES[d.name])
    for d in (
        DataSet(
            name="sst2",
            key="sst2",
            title="SST-2 (GLUE): 67,349 train phrases, 872 labelled dev sentences, 1,821 unlabelled test",
            origin="https://nlp.stanford.edu/sentiment/ (Socher et al. 2013), GLUE release (Wang et al. 2019)",
            version="GLUE SST-2 (dev.tsv md5 268856b487b2a31a28c0a93daaff7288)",
            licence="no explicit licence (Stanford NLP; research use). Cite Socher et al. 2013",
            used_for="census and probe jobs, the faithfulness evaluation, the SST-2 fine-tune and zoo text models",
            mirror="brunnurs/binary-classification-bert",
            commit="35e1628db50472679176dd31b992534a3866a86e",
            mirror_paths=(("", "data/SST2/"),),
        ),
        DataSet(
            name=MOVIES,
            key="movies",
            title="Movie reviews with human rationale spans (Zaidan et al. 2007; the source of ERASER movies)",
            origin="http://www.cs.jhu.edu/~ozaidan/rationales/ on Pang & Lee polarity v2.0",
            version="review_polarity_rationales: 1,800 annotated reviews + 200 of the 10th fold",
            licence="none stated (distributed for research). Cite Zaidan et al. 2007 and Pang & Lee 2004",
            used_for="the faithfulness evaluation (movies), census and probe jobs",
            mirror="yezhang-xiaofan/Rationale-CNN",
            commit="724f528851df593e239436a6d582f5b790397318",
            mirror_paths=(("", "movies/"),),
            present_globs=("withRats_pos/posR_*.txt", "withRats_neg/negR_*.txt"),
        ),
        DataSet(
            name="hatexplain",
            key="hatexplain",
            title="HateXplain validation (1,922) and test (1,924) posts with token-level rationales",
            origin="https://github.com/hate-alert/HateXplain (Mathew et al., AAAI 2021), Hugging Face export",
            version="Hugging Face `hatexplain` validation and test splits (JSON Lines)",
            licence="MIT (hate-alert/HateXplain); CC-BY-4.0 on the Hugging Face card. Offensive content",
            used_for="the faithfulness evaluation and the HateXplain fine-tune (explicit opt-in only)",
            mirror="swiyasree/HateSpeechDetection",
            commit="2a00e94445b4b3a248b8bb08e4f741d1c1aa1b54",
            mirror_paths=(
                ("validation.jsonl", "data/raw/hatexplain_validation.json"),
                ("test.jsonl", "data/raw/hatexplain_test.json"),
            ),
            offensive=True,
        ),
        DataSet(
            name="mnist-test",
            key="mnist",
            title="MNIST test set: 10,000 28x28 digits (IDX, gzip)",
            origin="http://yann.lecun.com/exdb/mnist/ (LeCun, Cortes & Burges)",
            version="t10k files, md5 9fb629c4189551a2d022fa330f9573f3 / ec29112dd5afa0611ce80d1b7f02629c",
            licence="CC BY-SA 3.0",
            used_for="the zoo vision models (8,000 train / 2,000 eval), the vision page's samples",
            mirror="lijie2020/vae",
            commit="6aa58aba724f46dba967fc7058945941d171d433",
            mirror_paths=(("", "data/MNIST/MNIST/raw/"),),
        ),
    )
}


class DataSetMissingError(FileNotFoundError):
    """A data set (or one of its files) is not in the data folder."""


def configured_data_dir() -> Path | None:
    """``ATTNSCOPE_DATA_DIR`` when set (read through ``ModelSettings``), else None."""
    folder = model_settings().data_dir
    return folder.expanduser().resolve() if folder else None


def default_data_dir() -> Path:
    """``$XDG_DATA_HOME/attnscope/data``, ``~/.local/share/attnscope/data`` when that is unset."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base).expanduser() / "attnscope" / "data"


def data_dir() -> Path:
    """The data folder: ``ATTNSCOPE_DATA_DIR``, else ``default_data_dir()``. It may not exist yet."""
    return configured_data_dir() or default_data_dir()


def get(name: str) -> DataSet:
    """The data set of folder ``name`` or of key ``name`` (``movies``)."""
    for d in DATASETS.values():
        if name in (d.name, d.key):
            return d
    raise LookupError(f"unknown data set {name!r}; known: {', '.join(DATASETS)}")


def missing_message(name: str, what: str | None = None) -> str:
    """What to tell a user whose data set ``name`` (or its file ``what``) is not in the data folder."""
    item = f"{name}/{what}" if what else f"{name}/"
    return (
        f"data set {item} is not in the data folder ({DATA_DIR_ENV}, default {default_data_dir().name} under "
        f"the user's data home); fetch it with `{FETCH_COMMAND} {name}` (or `make data`), or set "
        f"{DATA_DIR_ENV} to a folder that holds it"
    )


def require(name: str, *parts: str) -> Path:
    """The path of data set ``name`` (or of ``parts`` inside it); ``DataSetMissingError`` if it is not there."""
    get(name)
    path = data_dir().joinpath(name, *parts)
    if not path.exists():
        raise DataSetMissingError(missing_message(name, "/".join(parts) or None))
    return path


def present(root: Path | None = None) -> dict[str, bool]:
    """Data set name -> whether its files are in ``root`` (default: the data folder)."""
    return {name: d.present(root) for name, d in DATASETS.items()}


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None
