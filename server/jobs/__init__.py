"""Data-set jobs: work over many examples, split into shards, checkpointed in the database, resumable.

- ``kinds``: what a job kind is (``JobKind``), the registry ``JOB_KINDS`` and its ``register_*`` functions;
- ``dataset_kinds``: the kinds the API offers (census, probe, faithfulness, head-effects);
- ``manager``: the job queue (admission, one job at a time in a worker thread, cancel, resume);
- ``shards``: where a job's shards run (in-process; a sink without a database for the CLI);
- ``ray_shards``: the same shards as Ray actor tasks (``ATTNSCOPE_RAY_ADDRESS``);
- ``records``: jobs and their shard checkpoints in the database.

The request executor of heavy routes (``@heavy``) is ``attnscope.server.request_executor``, not a job.
Guide: ``docs/guide/jobs.md``.
"""
