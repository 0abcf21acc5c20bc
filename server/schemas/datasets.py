"""What ``GET /datasets`` answers: every registered data set, whether it is in the data folder, and how to fetch it."""

from __future__ import annotations

from pydantic import BaseModel, Field


class DataSetPublic(BaseModel):
    name: str = Field(..., description="folder name in the data folder, e.g. movie-rationales-zaidan")
    key: str = Field(..., description="the name jobs and sample routes use for it (dataset=movies)")
    title: str
    present: bool = Field(..., description="its files are in the data folder (a job on it can start)")
    complete: bool = Field(..., description="every file has the registered size (false for the test fixtures' cuts)")
    files: int = Field(..., description="number of files")
    bytes: int = Field(..., description="registered size of all its files")
    licence: str
    origin: str = Field(..., description="the authors' canonical release")
    version: str
    used_for: str
    offensive: bool = Field(..., description="holds offensive text: jobs on it need the explicit opt-in")
    fetch: str = Field(..., description="the command that puts it in the data folder")


class DataSetList(BaseModel):
    items: list[DataSetPublic]
    total: int
    present: int = Field(..., description="how many of them are in the data folder")


class DataSetExamplePublic(BaseModel):
    """One example of a text data set (``GET /datasets/{dataset}/examples/{key}``): what a job result names
    by its id or index, with its text to open it as a run."""

    dataset: str = Field(..., description="sst2, movies or hatexplain")
    split: str = Field(..., description="the split it was found in")
    index: int = Field(..., description="its position in the split (what a faithfulness result names)")
    total: int = Field(..., description="examples in the split")
    id: str = Field(..., description="its id (what census, probe and head-effects results name)")
    text: str = Field(..., description="the words joined by spaces (the text the jobs run)")
    words: list[str] = Field(..., description="the data set's own word tokens")
    label: int = Field(..., description="the gold label's index into labels")
    label_name: str
    labels: list[str]
    rationale: list[int] | None = Field(None, description="0/1 per word: the human rationale, where one exists")
