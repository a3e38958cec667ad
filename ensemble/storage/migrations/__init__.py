"""Alembic migrations of the results database, shipped as package data.

One revision per released schema in ``versions/``.  Run them with
``ensemble-tuner db upgrade --database URL`` (which calls
:func:`ensemble.storage.upgrade`); a fresh database never needs them because
``Storage`` creates it at the head revision directly.
"""
