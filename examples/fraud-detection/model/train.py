#!/usr/bin/env python3
"""Trains the fraud-detection example's two models and writes their reference scores.

Run from anywhere:  python3 examples/fraud-detection/model/train.py
Check the committed files:  python3 examples/fraud-detection/model/train.py --check

It creates a virtual environment beside itself (.venv, not committed) with pinned
scikit-learn, skl2onnx and onnxruntime from PyPI, and every package they pull in pinned
too (REQUIREMENTS), re-runs itself there with the environment of PINNED_ENV, and then:

1. generates card transactions (legitimate ones, and bursts of fraud on a few cards),
2. enriches each with the per-card features the app computes (`enrich` in
   src/streamlets/enrich.rs computes exactly these, in the same order),
3. trains a logistic regression (model v1) and gradient-boosted trees (model v2) on them,
4. exports both to ONNX with ZipMap disabled (outputs `label` and `probabilities`, a
   float tensor [N, 2]), plus a model taking 5 features for the tests of invalid models,
   and pickles both as they are (joblib) for the Python scorer (../python/),
5. generates a separate scenario (the fixed input set) and writes it as transactions
   (scenario.jsonl), its fraud labels, its features and the scores of both models from
   onnxruntime (reference.json).

Without arguments it writes those seven files beside itself (the pickles beside the Python
scorer, ../python/). With --check it writes them
into a temporary directory instead and compares each with the committed file byte for
byte: it names every file that differs and exits with 1 if one does.

A rerun writes the same bytes. What made reruns differ, and what pins it:

- The logistic regressions used to be fitted by lbfgs, which stopped on its tolerance far
  from the optimum (the intercept at -10.9 where the optimum is -14.3), at a point that
  depended on the rounding of OpenBLAS's kernels, which OpenBLAS picks for the CPU: the
  same run on an AVX2 kernel (OPENBLAS_CORETYPE=Haswell) wrote another lr.onnx, all of
  whose coefficients differed, and 485 of the 826 lr scores of reference.json. They are now
  fitted by Newton's method (newton-cholesky) in float64 to a tolerance of 1e-12, which
  reaches the optimum (unique: the loss is strictly convex) to well below float32's
  precision, so the float32 coefficients in the ONNX files come out the same on every
  kernel tried (SkylakeX, Haswell, Sandybridge, Prescott), with or without numpy's AVX-512
  and AVX2 loops.
- skl2onnx lists a model's operator sets (`opset_import`) in the order of a Python set of
  strings, which depends on the string hash seed, random per process: gbt.onnx came out
  with the two in either order. PYTHONHASHSEED=0 fixes it.
- OMP_NUM_THREADS, OPENBLAS_NUM_THREADS and MKL_NUM_THREADS are 1 and onnxruntime runs
  on one thread, so that no sum is split differently on a machine with more cores (no
  difference was seen between 1, 2, 8 and 16 threads; this rules it out).

PINNED_ENV is set before the interpreter of the virtual environment starts (numpy reads the
thread counts when it is imported, Python the hash seed when it starts), even when the
script is started with .venv/bin/python. Not covered: another Python or operating system
(math.log1p, math.exp and the like come from its C library) or another CPU architecture.
CI does not run this script: the Rust tests check the committed models against the
committed reference scores.
"""

import argparse
import filecmp
import json
import math
import os
import subprocess
import sys
import tempfile
import venv

HERE = os.path.dirname(os.path.abspath(__file__))
VENV = os.path.join(HERE, ".venv")
# The three packages the script uses, and everything they pull in, so that a later run does
# not get another numpy, scipy or onnx (pip freeze of the environment that wrote the files).
REQUIREMENTS = [
    "scikit-learn==1.9.1",
    "skl2onnx==1.20.0",
    "onnxruntime==1.32.0",
    "cloudpickle==3.1.3",
    "flatbuffers==25.12.19",
    "joblib==1.6.0",
    "ml_dtypes==0.7.0",
    "narwhals==2.29.0",
    "numpy==2.4.6",
    "onnx==1.23.2",
    "packaging==26.4",
    "protobuf==7.36.2",
    "scipy==1.17.1",
    "threadpoolctl==3.8.0",
    "typing_extensions==4.16.0",
]
# Set before the virtual environment's interpreter starts (see the docstring for why).
PINNED_ENV = {
    "PYTHONHASHSEED": "0",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}
PYTHON_SCORER = os.path.join(os.path.dirname(HERE), "python")
# What the script writes, and the directory each goes to: the pickled models go beside the
# Python scorer that loads them, so that `build` puts them in its image.
OUTPUTS = {
    "lr.onnx": HERE,
    "gbt.onnx": HERE,
    "five-features.onnx": HERE,
    "lr.joblib": PYTHON_SCORER,
    "gbt.joblib": PYTHON_SCORER,
    "reference.json": HERE,
    "scenario.jsonl": HERE,
}

START = 1_700_000_000_000  # 2023-11-14T22:13:20Z, in milliseconds
HOUR = 3_600_000
COMMON = ["grocery", "fuel", "restaurant", "online", "travel"]
RISKY = ["electronics", "jewelry", "cash"]
CATEGORIES = COMMON + RISKY
FIRST_SEEN_GAP_SECONDS = 30 * 24 * 3600  # what a card's first transaction counts as


def in_venv():
    return os.path.realpath(sys.prefix) == os.path.realpath(VENV)


def pinned():
    return all(os.environ.get(name) == value for name, value in PINNED_ENV.items())


def bootstrap():
    """Creates the virtual environment with the pinned packages, then runs this script in it,
    with PINNED_ENV set."""
    python = os.path.join(VENV, "bin", "python")
    if not os.path.exists(python):
        print(f"creating {VENV}", flush=True)
        venv.create(VENV, with_pip=True)
    subprocess.check_call(
        [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *REQUIREMENTS]
    )
    env = {**os.environ, **PINNED_ENV}
    os.execve(python, [python, os.path.abspath(__file__), *sys.argv[1:]], env)


class Card:
    """The running statistics the app keeps per card."""

    def __init__(self):
        self.count = 0
        self.mean = 0.0
        self.m2 = 0.0
        self.last = None
        self.categories = {}

    def features(self, tx):
        amount = tx["amount"]
        n = self.count
        if n >= 2:
            deviation = max(math.sqrt(self.m2 / (n - 1)), 1.0)
            z = (amount - self.mean) / deviation
        else:
            z = 0.0
        if self.last is None:
            gap = math.log1p(FIRST_SEEN_GAP_SECONDS)
        else:
            gap = math.log1p(max(tx["timestamp"] - self.last, 0) / 1000.0)
        share = self.categories.get(tx["category"], 0) / n if n >= 1 else 0.0
        hour = (tx["timestamp"] // HOUR) % 24
        return [
            math.log1p(amount),
            z,
            gap,
            share,
            math.log1p(n),
            1.0 if hour < 6 else 0.0,
            1.0 if tx["category"] in RISKY else 0.0,
        ]

    def update(self, tx):
        amount = tx["amount"]
        self.count += 1
        delta = amount - self.mean
        self.mean += delta / self.count
        self.m2 += delta * (amount - self.mean)
        self.last = tx["timestamp"]
        self.categories[tx["category"]] = self.categories.get(tx["category"], 0) + 1


def enrich(transactions):
    """The features of each transaction, in order, from the per-card state before it."""
    cards = {}
    rows = []
    for tx in transactions:
        card = cards.setdefault(tx["card"], Card())
        rows.append(card.features(tx))
        card.update(tx)
    return rows


def generate(rng, cards, fraud_share, days, prefix):
    """Transactions of `cards` cards over `days` days, sorted by time, with labels."""
    import numpy as np

    transactions = []
    for number in range(cards):
        card = f"{prefix}{number:04d}"
        typical = math.exp(rng.normal(3.3, 0.6))
        home = list(rng.choice(COMMON, size=3, replace=False))
        time = START + int(rng.uniform(0, 24 * HOUR))
        end = START + days * 24 * HOUR
        own = []
        while time < end:
            hour = (time // HOUR) % 24
            if hour < 6 and rng.random() < 0.85:
                time += (7 - hour) * HOUR  # people mostly sleep at night
            if rng.random() < 0.95:
                category = str(rng.choice(home))
            else:
                category = str(rng.choice(CATEGORIES))
            amount = round(typical * float(np.exp(rng.normal(0.0, 0.5))), 2)
            own.append((time, category, amount, False))
            time += int(rng.exponential(8 * HOUR)) + 60_000
        if rng.random() < fraud_share and len(own) > 6:
            # A burst of fraud after the card's history is established: large amounts,
            # minutes apart, in risky categories (mostly at night) or online (at night).
            at = own[int(rng.integers(5, len(own) - 1))][0]
            online = rng.random() < 0.15
            if online or rng.random() < 0.7:
                at = at - at % (24 * HOUR) + 24 * HOUR + int(rng.uniform(1, 5) * HOUR)
            for _ in range(int(rng.integers(1, 4))):
                at += int(rng.uniform(1, 10) * 60_000)
                category = "online" if online else str(rng.choice(RISKY))
                amount = round(typical * float(rng.uniform(8, 25)), 2)
                own.append((at, category, amount, True))
        for index, (time, category, amount, fraud) in enumerate(sorted(own)):
            merchant = f"{category}-{int(rng.integers(0, 12)):02d}"
            transactions.append(
                (
                    {
                        "id": f"{card}-{index:03d}",
                        "card": card,
                        "merchant": merchant,
                        "category": category,
                        "amount": amount,
                        "timestamp": time,
                    },
                    fraud,
                )
            )
    transactions.sort(key=lambda pair: (pair[0]["timestamp"], pair[0]["id"]))
    return [tx for tx, _ in transactions], [fraud for _, fraud in transactions]


def fold_base_value(onx):
    """Moves a binary tree classifier's single base value into the leaves of its first tree.

    skl2onnx writes one base value for a binary TreeEnsembleClassifier, which onnxruntime
    accepts but tract (the app's runtime) refuses: it wants one per class label. Every
    record reaches exactly one leaf of tree 0, so adding the base value to those leaves'
    weights scores the same in every runtime (the caller checks it against scikit-learn).
    """
    for node in onx.graph.node:
        if node.op_type != "TreeEnsembleClassifier":
            continue
        attributes = {attribute.name: attribute for attribute in node.attribute}
        if "base_values" not in attributes or len(attributes["base_values"].floats) != 1:
            continue
        base = attributes["base_values"].floats[0]
        trees = list(attributes["class_treeids"].ints)
        leaves = [leaf for leaf, tree in zip(attributes["class_nodeids"].ints, trees) if tree == 0]
        assert len(leaves) == len(set(leaves)), "a leaf of tree 0 votes more than once"
        weights = [
            weight + base if tree == 0 else weight
            for weight, tree in zip(attributes["class_weights"].floats, trees)
        ]
        del attributes["class_weights"].floats[:]
        attributes["class_weights"].floats.extend(weights)
        node.attribute.remove(attributes["base_values"])


def export(model, features, path):
    from skl2onnx import to_onnx

    onx = to_onnx(
        model,
        features[:1],
        options={id(model): {"zipmap": False}},
        target_opset={"": 15, "ai.onnx.ml": 3},
    )
    fold_base_value(onx)
    onx.graph.name = os.path.splitext(os.path.basename(path))[0]
    with open(path, "wb") as file:
        file.write(onx.SerializeToString())
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


def pickle(model, path):
    """Writes the scikit-learn model itself, for the Python scorer (../python/), which loads
    it with the same scikit-learn (../python/requirements.txt)."""
    import joblib

    joblib.dump(model, path)
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


def scores(path, features):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(
        path, sess_options=options, providers=["CPUExecutionProvider"]
    )
    name = session.get_inputs()[0].name
    label, probabilities = session.run(None, {name: features})
    return probabilities


def logistic_regression(x, y, **options):
    """Fitted to the optimum: Newton's method in float64 to 1e-12 (see the docstring)."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(solver="newton-cholesky", tol=1e-12, max_iter=100, **options)
    model.fit(x.astype(np.float64), y)
    assert model.n_iter_[0] < model.max_iter, "the logistic regression did not converge"
    return model


def write_outputs(out, python_out):
    """Writes OUTPUTS into the directory `out`, the pickled models into `python_out`."""
    import numpy as np
    from sklearn.ensemble import GradientBoostingClassifier

    rng = np.random.default_rng(14)
    train, labels = generate(rng, cards=2000, fraud_share=0.3, days=20, prefix="train-")
    x = np.array(enrich(train), dtype=np.float32)
    y = np.array(labels, dtype=np.int64)
    print(f"training on {len(train)} transactions, {int(y.sum())} fraudulent")

    lr = logistic_regression(x, y, class_weight={0: 1, 1: 10})
    gbt = GradientBoostingClassifier(n_estimators=20, max_depth=3, random_state=14).fit(x, y)
    small = logistic_regression(x[:, :5], y)

    export(lr, x, os.path.join(out, "lr.onnx"))
    export(gbt, x, os.path.join(out, "gbt.onnx"))
    export(small, x[:, :5], os.path.join(out, "five-features.onnx"))
    for name, model in (("lr", lr), ("gbt", gbt)):
        pickle(model, os.path.join(python_out, f"{name}.joblib"))

    scenario, frauds = generate(
        np.random.default_rng(2024), cards=24, fraud_share=0.4, days=6, prefix="card-"
    )
    features = np.array(enrich(scenario), dtype=np.float32)
    reference = {"ids": [tx["id"] for tx in scenario], "features": features.tolist()}
    for name, model in (("lr", lr), ("gbt", gbt)):
        onnx_scores = scores(os.path.join(out, f"{name}.onnx"), features)
        sklearn_scores = model.predict_proba(features)
        assert np.allclose(onnx_scores, sklearn_scores, atol=1e-5), f"{name}: onnx != sklearn"
        flagged = onnx_scores[:, 1] >= 0.5
        caught = [f for f, flag in zip(frauds, flagged) if f and flag]
        false_alarms = int(sum(flag and not f for f, flag in zip(frauds, flagged)))
        print(
            f"{name}: flags {len(caught)} of {sum(frauds)} frauds in the scenario, "
            f"{false_alarms} of {len(frauds) - sum(frauds)} legitimate"
        )
        assert len(caught) == sum(frauds), f"{name} misses a fraud of the scenario"
        # Clear of the threshold, so the app's scores (equal up to 1e-5) flag the same.
        margin = min(abs(p - 0.5) for p in onnx_scores[:, 1])
        print(f"{name}: the scores closest to the threshold are {margin:.4f} away")
        assert margin > 1e-3, f"{name}: a score is too close to the threshold"
        reference[name] = onnx_scores.astype(float).tolist()
    reference["fraud"] = [tx["id"] for tx, fraud in zip(scenario, frauds) if fraud]

    with open(os.path.join(out, "scenario.jsonl"), "w") as file:
        for tx in scenario:
            file.write(json.dumps(tx) + "\n")
    with open(os.path.join(out, "reference.json"), "w") as file:
        json.dump(reference, file)
    print(f"wrote the scenario ({len(scenario)} transactions, {sum(frauds)} fraudulent)")


def difference(name, committed, trained):
    """What differs between two versions of an output, in a few words."""
    with open(committed, "rb") as file:
        old = file.read()
    with open(trained, "rb") as file:
        new = file.read()
    bytes_differing = sum(a != b for a, b in zip(old, new)) + abs(len(old) - len(new))
    words = f"{bytes_differing} bytes differ ({len(old)} committed, {len(new)} now)"
    if name == "reference.json":
        old, new = json.loads(old), json.loads(new)
        for key in sorted(set(old) | set(new)):
            a, b = old.get(key), new.get(key)
            if a == b:
                continue
            if key in ("lr", "gbt") and a is not None and b is not None and len(a) == len(b):
                pairs = [(p, q) for row_a, row_b in zip(a, b) for p, q in zip(row_a, row_b)]
                changed = [abs(p - q) for p, q in pairs if p != q]
                words += (
                    f"; {key}: {len(changed)} of {len(pairs)} scores differ,"
                    f" by up to {max(changed):.3g}"
                )
            else:
                words += f"; {key} differs"
    return words


def check():
    """Trains into a temporary directory and compares every output with the committed one."""
    with tempfile.TemporaryDirectory(prefix="fraud-model-") as out:
        write_outputs(out, out)
        failed = False
        for name, directory in OUTPUTS.items():
            committed, trained = os.path.join(directory, name), os.path.join(out, name)
            if not os.path.exists(committed):
                print(f"check: {name} is missing from {directory}")
                failed = True
            elif filecmp.cmp(committed, trained, shallow=False):
                print(f"check: {name} is the same")
            else:
                print(f"check: {name} DIFFERS: {difference(name, committed, trained)}")
                failed = True
    if failed:
        print("check: the committed files are not what this script writes")
        return 1
    print("check: every committed file is what this script writes, byte for byte")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="train into a temporary directory and compare every output with the committed"
        " file, byte for byte; exit 1 if one differs",
    )
    args = parser.parse_args()
    if args.check:
        sys.exit(check())
    write_outputs(HERE, PYTHON_SCORER)


if __name__ == "__main__":
    if in_venv() and pinned():
        main()
    else:
        bootstrap()
