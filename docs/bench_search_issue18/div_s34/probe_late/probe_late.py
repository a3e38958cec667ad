"""Dev probe (session 34): divisibility columns only after features_after x inputs finite results."""
from techniques.default import DefaultEnsemble


class Late1(DefaultEnsemble):
    name = "late1"

    def __init__(self, **kw):
        super().__init__(**kw)
        self.arms[self._model].features_after = 1.0


class Late2(DefaultEnsemble):
    name = "late2"

    def __init__(self, **kw):
        super().__init__(**kw)
        self.arms[self._model].features_after = 2.0
