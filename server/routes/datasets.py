"""The data sets: which are in the data folder (and the command that fetches the rest); samples for vision
runs (index, label) and one as PNG; one text example by the id or index a job result gives it."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Path, Query, Response, status

from attnscope.models import data_registry
from attnscope.models.inputs import encode_png
from attnscope.models.zoo import samples
from attnscope.pipelines.dataset_lookup import MAX_KEY_CHARS, UnknownExampleError, find_example
from attnscope.pipelines.datasets import OffensiveContentError
from attnscope.server.errors import error_responses
from attnscope.server.request_executor import heavy
from attnscope.server.schemas import DataSetExamplePublic, DataSetList, DataSetPublic, DatasetSample, SampleList

router = APIRouter(prefix="/datasets", tags=["datasets"])


@router.get(
    "",
    response_model=DataSetList,
    summary="The registered data sets, whether each is in the data folder, and the command that fetches it",
)
def read_datasets() -> DataSetList:
    items = [
        DataSetPublic(
            name=d.name,
            key=d.key,
            title=d.title,
            present=d.present(),
            complete=d.complete(),
            files=len(d.files),
            bytes=d.size,
            licence=d.licence,
            origin=d.origin,
            version=d.version,
            used_for=d.used_for,
            offensive=d.offensive,
            fetch=f"{data_registry.FETCH_COMMAND} {d.name}",
        )
        for d in data_registry.DATASETS.values()
    ]
    return DataSetList(items=items, total=len(items), present=sum(i.present for i in items))


@router.get(
    "/{dataset}/samples",
    response_model=SampleList,
    summary="Sample indices and labels",
    responses=error_responses({503: "MNIST is not in the data folder (the detail names the command that fetches it)"}),
)
def read_samples(
    dataset: str, offset: Annotated[int, Query(ge=0)] = 0, limit: Annotated[int, Query(ge=1, le=500)] = 50
) -> SampleList:
    labels = samples.labels(dataset)
    rows = [DatasetSample(index=i, label=labels[i]) for i in range(offset, min(offset + limit, len(labels)))]
    split = (
        "eval (held out, 2,000 of MNIST's 10,000 test digits)" if dataset == "mnist" else "bundled with scikit-image"
    )
    return SampleList(dataset=dataset, split=split, total=len(labels), samples=rows)


@router.get(
    "/{dataset}/samples/{index}/image",
    responses={200: {"content": {"image/png": {}}}, **error_responses(503)},
    summary="One sample as PNG",
)
@heavy
def read_sample_image(dataset: str, index: int) -> Response:
    image, _ = samples.sample(dataset, index)
    return Response(encode_png(image), media_type="image/png")


@router.get(
    "/{dataset}/examples/{key}",
    response_model=DataSetExamplePublic,
    summary="One text example by the id or index a job result names it by: its text, words and label",
    description="A census, probe or head-effects result names its examples by id (`sst2-dev-12`), a "
    "faithfulness result by index in the split: `key` takes either (all digits: an index). Without `split`, "
    "an index is in the default split and an id is looked up in every split. HateXplain needs "
    "`allow_offensive=true`.",
    responses=error_responses(
        {
            403: "HateXplain without allow_offensive=true",
            404: "no example of that id or index in the split",
            422: "an unknown data set or split",
            503: "the data set is not in the data folder (the detail names the command that fetches it)",
        }
    ),
)
@heavy
def read_example(
    dataset: str,
    key: Annotated[str, Path(min_length=1, max_length=MAX_KEY_CHARS, description="an example id, or an index")],
    split: Annotated[str | None, Query(max_length=20, description="the split (default: see above)")] = None,
    allow_offensive: Annotated[bool, Query(description="the explicit opt-in HateXplain needs")] = False,
) -> DataSetExamplePublic:
    try:
        found = find_example(dataset, key, split, allow_offensive=allow_offensive)
    except OffensiveContentError as exc:
        raise HTTPException(status.HTTP_403_FORBIDDEN, f"{exc} (here: the query allow_offensive=true)") from None
    except UnknownExampleError as exc:
        raise HTTPException(status.HTTP_404_NOT_FOUND, str(exc.args[0])) from None
    except ValueError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from None
    ex = found.example
    return DataSetExamplePublic(
        dataset=found.dataset,
        split=found.split,
        index=found.index,
        total=found.total,
        id=ex.id,
        text=ex.text,
        words=list(ex.words),
        label=ex.label,
        label_name=ex.labels[ex.label],
        labels=list(ex.labels),
        rationale=None if ex.rationale is None else list(ex.rationale),
    )
