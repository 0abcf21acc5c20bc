"""Request and response schemas of the REST API: pure pydantic (the dashboard imports them too),
one module per resource, all re-exported here."""

from attnscope.server.schemas.core import (  # noqa: F401
    MAX_TEXT_CHARS, Health, ModelPublic, ModelList, SampleRef, RunCreate, Prediction, ImageSource,
    RunPublic, DatasetSample, SampleList, HeadGeometry, ModelStructure, AttentionSlice, ErrorBody,
    ConvAttentionPair,
)
from attnscope.server.schemas.jobs import (  # noqa: F401
    JobCreate, JobPublic, JobKindPublic,
)
from attnscope.server.schemas.structure import (  # noqa: F401
    ShiftResult, HeadsResult, EvolutionProfile, EvolutionResult, ImportanceResult,
)
from attnscope.server.schemas.measure import (  # noqa: F401
    BOUND_STATUS, BLOCK_BOUND_STATUS, BlockBoundPublic, MeasurePublic, LipschitzPublic, ParticlesPublic, FixedPointPublic,
)
from attnscope.server.schemas.faithfulness import (  # noqa: F401
    FAITHFULNESS_CONVENTIONS, FaithfulnessCreate, ExplainerResult, FaithfulnessPublic, ExplainerInfo,
)
