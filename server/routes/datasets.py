"""Dataset samples for vision runs: list them (index, label) and fetch one as PNG."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from attnscope.models.inputs import encode_png
from attnscope.models.zoo import samples
from attnscope.server.schemas import DatasetSample, SampleList

router = APIRouter(prefix="/datasets", tags=["datasets"])


@router.get("", summary="Datasets with samples a vision run can use, and their sizes")
def read_datasets() -> dict[str, int]:
    return samples.datasets()


@router.get("/{dataset}/samples", response_model=SampleList, summary="Sample indices and labels")
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
    "/{dataset}/samples/{index}/image", responses={200: {"content": {"image/png": {}}}}, summary="One sample as PNG"
)
def read_sample_image(dataset: str, index: int) -> Response:
    image, _ = samples.sample(dataset, index)
    return Response(encode_png(image), media_type="image/png")
