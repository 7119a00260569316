"""The fraud-detection app's scorer in Python: scikit-learn itself, where the Rust app runs the
same models exported to ONNX (``blueprint.toml`` beside this file; docs/python.md).

The records match the Rust app's (``../src/model.rs``): the same record names and fields, so
the Rust ``enrich`` streamlet's transactions are read here, and the Rust ``merchant-report``
and ``alert-logger`` read these scores.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import joblib
import numpy

import runnel

HERE = os.path.dirname(os.path.abspath(__file__))


@dataclass
class Transaction:
    """A card payment, as POSTed to the ingress."""

    id: str
    card: str
    merchant: str
    category: str
    amount: float
    timestamp: int


@dataclass
class CardFeatures:
    """The model's seven features, in the model's order."""

    amount_log: float
    amount_z: float
    gap_log: float
    category_share: float
    history_log: float
    night: float
    risky_category: float


@dataclass
class EnrichedTransaction:
    """A transaction with its card's features."""

    transaction: Transaction
    features: CardFeatures


@dataclass
class ScoredTransaction:
    """A transaction with the model's verdict."""

    transaction: Transaction
    features: CardFeatures
    fraud_probability: float
    flagged: bool
    model: str
    model_version: str


FEATURES = [
    "amount_log",
    "amount_z",
    "gap_log",
    "category_share",
    "history_log",
    "night",
    "risky_category",
]


@runnel.streamlet
class Score:
    """Scores each enriched transaction with a scikit-learn classifier loaded from a joblib
    file, a batch of transactions at a time."""

    transactions = runnel.Inlet(EnrichedTransaction, name="in")
    scored = runnel.Outlet(ScoredTransaction, name="out")
    model_file = runnel.Parameter(
        str,
        default="gbt.joblib",
        description="the pickled classifier (joblib), relative to this module's directory",
    )
    model_version = runnel.Parameter(
        str, default="2", description="the version scored records carry"
    )
    threshold = runnel.Parameter(
        float, default=0.5, description="from this probability on, a transaction is flagged"
    )

    def setup(self) -> None:
        self.model = joblib.load(os.path.join(HERE, self.model_file))
        self.fraud_column = list(self.model.classes_).index(1)

    def process_batch(self, batch: list[EnrichedTransaction]) -> None:
        # float32, as the model was trained on and as the ONNX scorer feeds its model.
        rows = numpy.array(
            [[getattr(record.features, name) for name in FEATURES] for record in batch],
            dtype=numpy.float32,
        )
        probabilities = self.model.predict_proba(rows)[:, self.fraud_column]
        for record, probability in zip(batch, probabilities.tolist()):
            self.scored.emit(
                ScoredTransaction(
                    transaction=record.transaction,
                    features=record.features,
                    fraud_probability=probability,
                    flagged=probability >= self.threshold,
                    model="fraud",
                    model_version=self.model_version,
                ),
                key=record.transaction.card,
            )
