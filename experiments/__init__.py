"""Seeded experiments on the zoo's twins: the seed papers' claims (Evolving Attention, hierarchical attention,
Cordonnier's Gaussian heads) measured over several training seeds, with the gap's confidence interval.

``python -m attnscope.experiments`` (``make experiments``) trains every arm for every seed, measures it and
writes ``results/experiments/``; ``docs/claims.md`` shows the tables and the verdict per claim.
"""
