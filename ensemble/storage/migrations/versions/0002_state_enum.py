"""Request and result states become an enum column: a CHECK constraint on the six TrialState strings.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-25

The columns keep their type (VARCHAR(16)) and their values (the same
strings); what changes is that the database refuses any other string, from
any client.  Written out in full (not imported from models.py or
ensemble.result) so that this revision keeps describing schema 2 after the
code moves on.

SQLite cannot add a constraint to a table in place, so alembic's batch mode
rebuilds ``requests`` and ``results`` (copy, drop, rename).
``ensemble.storage.schema.upgrade`` switches SQLite's foreign keys off for
the upgrade, because dropping the old ``requests`` table with them on would
cascade and delete every result; it checks the keys before committing.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

STATES = ("WAITING", "RUNNING", "OK", "FAILED", "TIMEOUT", "INVALID")


def upgrade() -> None:
    for table in ("requests", "results"):
        with op.batch_alter_table(table) as batch:
            batch.create_check_constraint(op.f(f"ck_{table}_trial_state"), sa.column("state").in_(STATES))
    op.execute(sa.text("UPDATE schema_info SET version = 2"))


def downgrade() -> None:
    for table in ("results", "requests"):
        with op.batch_alter_table(table) as batch:
            batch.drop_constraint(op.f(f"ck_{table}_trial_state"), type_="check")
    op.execute(sa.text("UPDATE schema_info SET version = 1"))
