"""Initial schema: runs, configurations, requests, results, run_state, schema_info.

Revision ID: 0001
Revises:
Create Date: 2026-11-22

Written out in full (not imported from models.py) so that this revision keeps
describing schema 1 after models.py moves on.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "schema_info",
        sa.Column("version", sa.Integer, primary_key=True, autoincrement=False),
        sa.PrimaryKeyConstraint("version", name="pk_schema_info"),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer, nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("app", sa.String(255), nullable=False),
        sa.Column("space_json", sa.Text, nullable=False),
        sa.Column("space_hash", sa.String(64), nullable=False),
        sa.Column("objective_json", sa.Text, nullable=False),
        sa.Column("settings_json", sa.Text, nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_runs"),
        sa.UniqueConstraint("name", name="uq_runs_name"),
    )
    op.create_table(
        "configurations",
        sa.Column("id", sa.Integer, nullable=False),
        sa.Column("run_id", sa.Integer, nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.Column("data_json", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_configurations"),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name="fk_configurations_run_id_runs", ondelete="CASCADE"),
        sa.UniqueConstraint("run_id", "hash", name="uq_configurations_run_id_hash"),
    )
    op.create_table(
        "requests",
        sa.Column("id", sa.Integer, nullable=False),
        sa.Column("run_id", sa.Integer, nullable=False),
        sa.Column("configuration_id", sa.Integer, nullable=False),
        sa.Column("technique", sa.String(255), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("duplicate", sa.Boolean, nullable=False),
        sa.Column("worker", sa.String(255), nullable=True),
        sa.Column("limit_s", sa.Double, nullable=True),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("claimed_at", sa.DateTime, nullable=True),
        sa.Column("heartbeat_at", sa.DateTime, nullable=True),
        sa.Column("finished_at", sa.DateTime, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_requests"),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name="fk_requests_run_id_runs", ondelete="CASCADE"),
        sa.ForeignKeyConstraint(
            ["configuration_id"],
            ["configurations.id"],
            name="fk_requests_configuration_id_configurations",
            ondelete="CASCADE",
        ),
    )
    op.create_index("ix_requests_run_id_state_id", "requests", ["run_id", "state", "id"])
    op.create_index("ix_requests_configuration_id", "requests", ["configuration_id"])
    op.create_table(
        "results",
        sa.Column("id", sa.Integer, nullable=False),
        sa.Column("request_id", sa.Integer, nullable=False),
        sa.Column("run_id", sa.Integer, nullable=False),
        sa.Column("configuration_id", sa.Integer, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("value", sa.Double, nullable=True),
        sa.Column("metrics_json", sa.Text, nullable=False),
        sa.Column("times_json", sa.Text, nullable=False),
        sa.Column("cost", sa.Double, nullable=True),
        sa.Column("reason", sa.Text, nullable=True),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_results"),
        sa.ForeignKeyConstraint(
            ["request_id"], ["requests.id"], name="fk_results_request_id_requests", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name="fk_results_run_id_runs", ondelete="CASCADE"),
        sa.ForeignKeyConstraint(
            ["configuration_id"],
            ["configurations.id"],
            name="fk_results_configuration_id_configurations",
            ondelete="CASCADE",
        ),
        sa.UniqueConstraint("request_id", name="uq_results_request_id"),
    )
    op.create_index("ix_results_run_id_request_id", "results", ["run_id", "request_id"])
    op.create_index("ix_results_configuration_id", "results", ["configuration_id"])
    op.create_table(
        "run_state",
        sa.Column("run_id", sa.Integer, nullable=False),
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("data_json", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("run_id", "key", name="pk_run_state"),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], name="fk_run_state_run_id_runs", ondelete="CASCADE"),
    )
    op.execute(sa.text("INSERT INTO schema_info (version) VALUES (1)"))


def downgrade() -> None:
    for table in ("run_state", "results", "requests", "configurations", "runs", "schema_info"):
        op.drop_table(table)
