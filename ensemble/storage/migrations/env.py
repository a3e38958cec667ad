"""Alembic environment: runs revisions on the connection that ``ensemble.storage.schema`` hands over.

There is no alembic.ini and no URL here on purpose: ``upgrade(url)`` opens the
database with the same settings as the tuner (SQLite pragmas, error mapping,
locking) and passes the open connection in ``config.attributes``.
"""

from __future__ import annotations

from alembic import context

from ensemble.storage.models import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError(
        "ensemble.storage migrations need an open connection; run them with "
        "`ensemble-tuner db upgrade --database URL` (ensemble.storage.upgrade), not the alembic CLI"
    )
context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=connection.dialect.name == "sqlite",  # SQLite cannot ALTER most things in place
)
with context.begin_transaction():
    context.run_migrations()
