"""Design of experiments under tight budgets (Bruel et al., CCGRID'19): the DLMT technique.

``design`` builds D-optimal designs (Fedorov's exchange, coordinate exchange,
candidate sets, D-criterion), ``models`` fits linear models and screens
factors by ANOVA with statsmodels, ``dlmt`` is the technique, ``report``
writes its per-step report.  statsmodels (the ``stats`` extra) is imported
only when a model is fitted.
"""

from techniques.doe.dlmt import DLMT

__all__ = ["DLMT"]
