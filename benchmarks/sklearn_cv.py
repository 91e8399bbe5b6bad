"""Cross-validation scores of five scikit-learn classifiers on eight small datasets, for the ranking's agreement
with the pair tests on ordinary, heterogeneous data (issue 38): writes ``tests/data/sklearn_cv.csv`` (tidy: dataset,
model, repeat, fold, folds, score), so that tests and benchmarks read the scores and never re-run the CV.

Models: logreg (standardised, logistic regression), rf (random forest, 100 trees), knn (standardised, 5 neighbours),
nb (Gaussian naive Bayes: the weak one, far below the others on some datasets), svm (standardised, RBF SVC).
Datasets: scikit-learn's iris, wine, breast_cancer, digits (its first half, 899 images), and four synthetic ones
(make_classification twice, make_moons, make_circles; fixed seeds).  5 × 2-fold stratified CV (ρ = 1/2), the same
folds for every model, accuracy.

    python benchmarks/sklearn_cv.py        # about a minute on one core
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from sklearn import datasets
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import RepeatedStratifiedKFold
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "sklearn_cv.csv"
FOLDS, REPEATS = 2, 5


def models() -> dict:
    return {"logreg": make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000)),
            "rf": RandomForestClassifier(n_estimators=100, random_state=0),
            "knn": make_pipeline(StandardScaler(), KNeighborsClassifier(5)),
            "nb": GaussianNB(),
            "svm": make_pipeline(StandardScaler(), SVC())}


def data() -> dict:
    digits = datasets.load_digits()
    half = len(digits.target) // 2
    return {"iris": datasets.load_iris(return_X_y=True), "wine": datasets.load_wine(return_X_y=True),
            "breast_cancer": datasets.load_breast_cancer(return_X_y=True),
            "digits_half": (digits.data[:half], digits.target[:half]),
            "synthetic_a": datasets.make_classification(300, 20, n_informative=5, random_state=1),
            "synthetic_b": datasets.make_classification(400, 10, n_informative=3, n_redundant=3, flip_y=0.1,
                                                        class_sep=0.7, random_state=2),
            "moons": datasets.make_moons(300, noise=0.3, random_state=3),
            "circles": datasets.make_circles(300, noise=0.2, factor=0.5, random_state=4)}


def main() -> int:
    rows = []
    for name, (x, y) in data().items():
        splits = RepeatedStratifiedKFold(n_splits=FOLDS, n_repeats=REPEATS, random_state=0).split(x, y)
        for index, (train, test) in enumerate(splits):
            for model, estimator in models().items():
                score = estimator.fit(x[train], y[train]).score(x[test], y[test])
                rows.append({"dataset": name, "model": model, "repeat": index // FOLDS, "fold": index % FOLDS,
                             "folds": FOLDS, "score": round(float(score), 6)})
        print(name, flush=True)
    pd.DataFrame(rows).to_csv(OUT, index=False)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
