"""runs: a name, a pin and the token count (the workspace of runs, issue 26 item 10)

Revision ID: 0002
Revises: 0001

``n_tokens`` of the runs already stored is filled from their ``token_ids`` (a JSON list; vision runs
have none and stay NULL until they are computed again).
"""

import json

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("name", sa.String(200), nullable=True))
        batch.add_column(sa.Column("pinned", sa.Boolean(), nullable=False, server_default=sa.false()))
        batch.add_column(sa.Column("n_tokens", sa.Integer(), nullable=True))
    op.create_index("ix_runs_created", "runs", ["created"])
    conn = op.get_bind()
    runs = sa.table(
        "runs", sa.column("id", sa.String), sa.column("token_ids", sa.Text), sa.column("n_tokens", sa.Integer)
    )
    rows = conn.execute(sa.select(runs.c.id, runs.c.token_ids).where(runs.c.token_ids.is_not(None))).all()
    for run_id, token_ids in rows:
        try:
            n = len(json.loads(token_ids))
        except (ValueError, TypeError):
            continue
        conn.execute(sa.update(runs).where(runs.c.id == run_id).values(n_tokens=n))


def downgrade() -> None:
    op.drop_index("ix_runs_created", "runs")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("n_tokens")
        batch.drop_column("pinned")
        batch.drop_column("name")
