"""The database behind the API: runs (their inputs, so a run id survives restarts) and data-set jobs
(parameters, status, progress, per-shard checkpoints and results). SQLAlchemy 2 models, Alembic
migrations run at start-up; an SQLite file in WAL mode by default, any SQLAlchemy URL otherwise
(``docs/guide/configuration.md``)."""
