"""The default without the failure model (the 'before' of issue 18), for screens only."""
from techniques.default import DefaultEnsemble


class DefaultNoModel(DefaultEnsemble):
    name = "default-no-failure-model"

    def __init__(self, *, seed=None, **options):
        super().__init__(seed=seed, feasibility=None, **options)
