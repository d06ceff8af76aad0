"""The metric declarations: one per metric, its formula written once, and what is generated from them.

``declarations``: the catalogue (``Metric``, ``METRICS``, ``BEYOND``, request parsing); ``formulas``: a
formula (SQL over per-(user, k) statistics) turned into Polars and into the shipped SQL; ``beyond``: the
beyond-accuracy names and stages; ``formula_trees``: generated (``python -m rankwise.generate.sql``).
"""

from rankwise.metrics.declarations import BEYOND, METRICS, REGISTRY, Metric

__all__ = ["BEYOND", "METRICS", "REGISTRY", "Metric"]
