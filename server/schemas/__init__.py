"""Request and response schemas of the REST API: pure pydantic (the dashboard imports them too),
one module per resource, all re-exported here."""

from attnscope.server.schemas.core import (  # noqa: F401
    MAX_NEW_TOKENS,
    MAX_TEXT_CHARS,
    AttentionRows,
    AttentionSlice,
    ConvAttentionPair,
    DatasetSample,
    ErrorBody,
    GenerateCreate,
    Generation,
    GenerationStep,
    HeadGeometry,
    Health,
    ImageSource,
    ModelList,
    ModelPublic,
    ModelStructure,
    NextToken,
    Prediction,
    RunCreate,
    RunPublic,
    SampleList,
    SampleRef,
)
from attnscope.server.schemas.faithfulness import (  # noqa: F401
    FAITHFULNESS_CONVENTIONS,
    ExplainerInfo,
    ExplainerResult,
    FaithfulnessCreate,
    FaithfulnessPublic,
)
from attnscope.server.schemas.interventions import (  # noqa: F401, E402
    HeadEffectsCreate,
    HeadEffectsPublic,
    InterventionCreate,
    InterventionPublic,
)
from attnscope.server.schemas.jobs import (  # noqa: F401
    JobCreate,
    JobKindPublic,
    JobPublic,
)
from attnscope.server.schemas.measure import (  # noqa: F401
    BLOCK_BOUND_STATUS,
    BOUND_STATUS,
    BlockBoundPublic,
    FixedPointPublic,
    LipschitzPublic,
    MeasurePublic,
    ParticlesPublic,
)
from attnscope.server.schemas.structure import (  # noqa: F401
    EvolutionProfile,
    EvolutionResult,
    HeadsResult,
    ImportanceResult,
    ShiftResult,
)
