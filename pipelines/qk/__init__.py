"""Why a head attends (``docs/methods/qk-attribution.md``): the query/key view of one (query, key)
pair (``qk_view``), an exact split of its score into query-part x key-part terms
(``qk_attribution``), and Q-, K- and V-composition scores between heads from their weights
(``composition``). The math takes tensors; ``site_parts`` and ``explain`` read them off a model
through its ``Sites``."""
