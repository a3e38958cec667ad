"""The scikit-learn models of Cummins et al. (ADAPT 2016, Section 5), on plain feature arrays.

Classifiers predict Omega(s) from f(s) (Section 4.1).  The paper uses Weka;
we use the scikit-learn model closest to each:

=================  ===========================================================
paper (Weka)       here
=================  ===========================================================
J48                ``DecisionTreeClassifier`` (CART with entropy splits)
RandomForest       ``RandomForestClassifier``
NaiveBayes         ``GaussianNB``
SimpleLogistic /   ``LogisticRegression`` on standardised features
Logistic
SMO                ``SVC(kernel="linear")`` on standardised features (SMO's
                   default kernel is the linear one, with normalised inputs)
=================  ===========================================================

Regressors (Sections 4.2 and 4.3) are random forests of regression trees
over ``[f(s), w_r, w_c]``, as the paper chose them for large feature sets.
Each factory takes the seed of the caller's Generator so a model is
reproducible; scikit-learn is imported inside the factories (lazy, optional).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ensemble.errors import TechniqueError

__all__ = ["CLASSIFIERS", "make_classifier", "make_regressor"]


def _j48(seed: int) -> Any:
    from sklearn.tree import DecisionTreeClassifier

    return DecisionTreeClassifier(criterion="entropy", min_samples_leaf=2, random_state=seed)


def _forest(seed: int) -> Any:
    from sklearn.ensemble import RandomForestClassifier

    return RandomForestClassifier(n_estimators=100, random_state=seed, n_jobs=1)


def _naive_bayes(seed: int) -> Any:
    from sklearn.naive_bayes import GaussianNB

    return GaussianNB()


def _logistic(seed: int) -> Any:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000, random_state=seed))


def _smo(seed: int) -> Any:
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    return make_pipeline(StandardScaler(), SVC(kernel="linear", random_state=seed))


#: paper name -> factory(seed) of an unfitted classifier
CLASSIFIERS: dict[str, Callable[[int], Any]] = {
    "J48": _j48, "RandomForest": _forest, "NaiveBayes": _naive_bayes, "Logistic": _logistic, "SMO": _smo}


def make_classifier(name: str, seed: int) -> Any:
    """An unfitted classifier by its paper name; ``TechniqueError`` lists the names."""
    try:
        return CLASSIFIERS[name](seed)
    except KeyError:
        raise TechniqueError(f"make_classifier(name={name!r}): use one of {sorted(CLASSIFIERS)}") from None


def make_regressor(seed: int) -> Any:
    """The random forest of regression trees used for both regressor methods (Section 5)."""
    from sklearn.ensemble import RandomForestRegressor

    return RandomForestRegressor(n_estimators=100, min_samples_leaf=2, random_state=seed, n_jobs=1)
