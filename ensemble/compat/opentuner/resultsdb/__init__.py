"""``opentuner.resultsdb``: only the record classes (``models``); results live in our database."""

from ensemble.compat.opentuner.resultsdb import models

__all__ = ["models"]
