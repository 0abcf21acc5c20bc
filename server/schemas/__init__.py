"""Request and response schemas of the REST API: pure pydantic (the dashboard imports them too),
one module per resource, all re-exported here.

Naming rule (every class here follows it; the JSON field names and the URL paths are the contract,
the class names only say which family a model belongs to):

- ``*Create``: the JSON body of a request (``RunCreate`` for ``POST /runs``, ``FaithfulnessCreate``,
  ``JobCreate``, and ``GenerateCreate``, the ``generate`` part of a run's body).
- ``*Update``: the JSON body of a ``PATCH`` (``RunUpdate`` for ``PATCH /runs/{id}``): the fields to change.
- ``*Params``: the ``params`` of one job kind in ``POST /jobs`` (``CensusParams``, ``ProbeParams``,
  ``FaithfulnessParams``); ``JOB_PARAMS`` maps each kind's name to its model.
- ``*Public``: what one route answers (``RunPublic``, ``ShiftPublic``, ``JobPublic``, ...), or one item
  of a route that answers a JSON array (``ExplainerPublic``, ``JobKindPublic``). A job kind's result
  is ``<Kind>ResultPublic`` (``CensusResultPublic``, ``ProbeResultPublic``,
  ``FaithfulnessResultPublic``); ``JOB_RESULTS`` maps each kind's name to its model and
  ``JobResultPublic`` is their union on ``kind`` (``attnscope.server.schemas.job_results`` says how a
  new kind adds its model).
- ``*List``: a page of a collection with its counts (``ModelList``, ``SampleList``, ``DataSetList``).
- a plain noun: a part nested inside one of the above (``Prediction``, ``GenerationStep``,
  ``HeadScores``, ``ShiftHead``, ``ExplainerScores``, ``BlockBound``, ``CensusRow``, ...).
- ``ErrorBody``: the one error answer of every route (4xx and 5xx).

Every field is typed down to its leaves (nested models, ``list[list[float]]``, ...): no bare ``list``,
``dict`` or ``Any`` in a response, so a client can validate what it gets (``tests/server/test_schemas.py``).
"""

from attnscope.server.schemas.compare import HeadComparisonPublic  # noqa: F401
from attnscope.server.schemas.core import (  # noqa: F401
    MAX_NEW_TOKENS,
    MAX_SLICE_BYTES,
    MAX_STRIDE,
    MAX_TEMPERATURE,
    MAX_TEXT_CHARS,
    MAX_TOP_K,
    RANGE_PATTERN,
    AttentionRowsPublic,
    AttentionSlicePublic,
    AttentionTopKPublic,
    ConvAttentionPublic,
    DatasetSample,
    ErrorBody,
    GenerateCreate,
    Generation,
    GenerationOptions,
    GenerationStep,
    HeadGeometry,
    HealthPublic,
    ImageSource,
    ModelList,
    ModelPublic,
    ModelStructurePublic,
    NextToken,
    Prediction,
    RunCreate,
    RunPublic,
    SampleList,
    SampleRef,
    ThumbnailsPublic,
)
from attnscope.server.schemas.datasets import DataSetExamplePublic, DataSetList, DataSetPublic  # noqa: F401
from attnscope.server.schemas.faithfulness import (  # noqa: F401
    FAITHFULNESS_CONVENTIONS,
    ExplainerPublic,
    ExplainerScores,
    FaithfulnessCreate,
    FaithfulnessPublic,
)
from attnscope.server.schemas.interventions import (  # noqa: F401, E402
    HeadEffectsCreate,
    HeadEffectsPublic,
    InterventionCreate,
    InterventionPublic,
    ResidualPatchingCreate,
    ResidualPatchingPublic,
)
from attnscope.server.schemas.job_results import (  # noqa: F401
    JOB_RESULTS,
    CensusResultPublic,
    CensusRow,
    CircuitEdgeRow,
    CircuitResultPublic,
    DlaExample,
    DlaResultPublic,
    DlaRow,
    FaithfulnessCurves,
    FaithfulnessResultPublic,
    FaithfulnessRow,
    HeadEffectExample,
    HeadEffectRow,
    HeadEffectsResultPublic,
    HeadStats,
    JobResultPublic,
    ProbeResultPublic,
    ProbeRow,
    TopHead,
    Truncation,
)
from attnscope.server.schemas.jobs import (  # noqa: F401
    JOB_PARAMS,
    CensusParams,
    CircuitParams,
    DlaParams,
    FaithfulnessParams,
    JobCreate,
    JobKindPublic,
    JobPublic,
    ProbeParams,
)
from attnscope.server.schemas.measure import (  # noqa: F401
    BLOCK_BOUND_STATUS,
    BOUND_STATUS,
    BlockBound,
    FixedPointPublic,
    LipschitzPublic,
    MeasurePublic,
    ParticlesPublic,
)
from attnscope.server.schemas.qk import (  # noqa: F401
    MAX_QK_PARTS,
    MAX_QK_TERMS,
    CompositionPublic,
    QKAttribution,
    QKPublic,
    QKTerm,
    QKVectors,
)
from attnscope.server.schemas.structure import (  # noqa: F401
    EvolutionProfile,
    EvolutionPublic,
    HeadScores,
    HeadsPublic,
    ImportancePublic,
    Offset,
    ShiftHead,
    ShiftPublic,
    StructurePassPublic,
)
from attnscope.server.schemas.tokens import TokenCountPublic, TokenizeCreate  # noqa: F401
from attnscope.server.schemas.workspace import (  # noqa: F401
    MAX_LIST_LIMIT,
    MAX_LIST_OFFSET,
    MAX_LIST_QUERY,
    MAX_RUN_NAME,
    RunSummaryList,
    RunSummaryPublic,
    RunUpdate,
)
from attnscope.server.schemas.writes import (  # noqa: F401
    MAX_GRAPH_NODES,
    MAX_LENS_K,
    MAX_LENS_POSITIONS,
    AttributionCreate,
    AttributionPublic,
    GraphCreate,
    GraphEdge,
    GraphNode,
    GraphPublic,
    HeadSplit,
    LensCell,
    LensCreate,
    LensPublic,
    TokenProb,
    ValueWeightedPublic,
)
