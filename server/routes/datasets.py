"""The data sets: which are in the data folder (and the command that fetches the rest); samples for vision
runs (index, label) and one as PNG."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from attnscope.models import data_registry
from attnscope.models.inputs import encode_png
from attnscope.models.zoo import samples
from attnscope.server.errors import error_responses
from attnscope.server.request_executor import heavy
from attnscope.server.schemas import DataSetList, DataSetPublic, DatasetSample, SampleList

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
