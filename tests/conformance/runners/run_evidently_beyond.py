"""Run Evidently's beyond-accuracy recsys metrics (legacy Report API) on the beyond-accuracy dataset.

Usage: python run_evidently_beyond.py DATASET.json OUT.json [--k 1,3,5,10]
Means come from the Report; per-user novelty and diversity from the metric's own per-user step
(``get_miuf`` / ``get_ild``, fed the results the Report computed), checked to give the Report's mean.
"""

import math

import pandas as pd
from evidently.legacy.metrics import (DiversityMetric, NoveltyMetric, PersonalizationMetric, PopularityBias,
                                      ScoreDistribution)
from evidently.legacy.pipeline.column_mapping import ColumnMapping, RecomType
from evidently.legacy.report import Report

from _common import Dataset, entry, parse_args, write


def tables(ds):
    """current (user, item, score, f0..f{d-1}) for every recommended item; train (user, item, f...) per row."""
    dim = len(next(iter(ds.embeddings.values())))
    features = ["f%d" % j for j in range(dim)]
    current = pd.DataFrame([(u, i, s, *ds.embeddings[i]) for u, lst in ds.recs.items()
                            for i, s in zip(lst, ds.scores[u])], columns=["user", "item", "score", *features])
    train = pd.DataFrame([(u, i, *ds.embeddings[i]) for u, i in ds.train], columns=["user", "item", *features])
    return current, train, features


def main():
    args = parse_args(__doc__)
    ds = Dataset(args.dataset)
    current, train, features = tables(ds)
    mapping = ColumnMapping(recommendations_type="score", prediction="score", user_id="user", item_id="item")
    res = {}
    for k in args.ks:
        novelty, popularity, personalization = NoveltyMetric(k=k), PopularityBias(k=k), PersonalizationMetric(k=k)
        diversity, scores = DiversityMetric(k=k, item_features=features), ScoreDistribution(k=k)
        Report(metrics=[novelty, popularity, personalization, diversity, scores]).run(
            reference_data=None, current_data=current, column_mapping=mapping,
            additional_data={"current_train_data": train})
        stats = novelty._train_stats.get_result()
        distr, value = novelty.get_miuf(current, k, RecomType.SCORE, "user", "item", "score",
                                        stats.current / stats.current_n_users)
        assert math.isclose(value, novelty.get_result().current_value, rel_tol=1e-15)
        res["novelty@%d" % k] = entry(list(distr.items()), novelty.get_result().current_value,
                                      "NoveltyMetric(k=%d).current_value; per user: get_miuf" % k)
        pop = popularity.get_result()
        res["arp@%d" % k] = entry([], pop.current_apr, "PopularityBias(k=%d, normalize_arp=False).current_apr" % k)
        res["item_coverage@%d" % k] = entry([], pop.current_coverage, "PopularityBias(k=%d).current_coverage" % k)
        res["gini@%d" % k] = entry([], pop.current_gini, "PopularityBias(k=%d).current_gini" % k)
        res["personalization@%d" % k] = entry([], personalization.get_result().current_value,
                                              "PersonalizationMetric(k=%d).current_value" % k)
        dist = diversity._pairwise_distance.get_result()
        ild, value = diversity.get_ild(current, k, RecomType.SCORE, "user", "item", "score", dist.dist_matrix,
                                       dist.name_dict)
        assert math.isclose(value, diversity.get_result().current_value, rel_tol=1e-15)
        res["ild@%d" % k] = entry(list(zip(current["user"].unique().tolist(), ild)), diversity.get_result().current_value,
                                  "DiversityMetric(k=%d, item_features=%s).current_value; per user: get_ild"
                                  % (k, features))
        res["score_entropy@%d" % k] = entry([], scores.get_result().current_entropy,
                                            "ScoreDistribution(k=%d).current_entropy" % k)
    encoding = (
        "current_data = one row (user, item, score, f0..f%d) per recommended item, recommendations_type='score' "
        "(scores descend strictly along each list, so Evidently's average ranks are the positions; users with an "
        "empty list have no rows); additional_data current_train_data = every train row (user, item, the item's "
        "features), repeats kept; item features = the dataset's embeddings as columns. One Report per k with "
        "NoveltyMetric, PopularityBias, PersonalizationMetric, DiversityMetric, ScoreDistribution. Dataset: "
        "%d list users, %d of them with rows; %d train rows."
        % (len(features) - 1, len(ds.recs), current["user"].nunique(), len(ds.train)))
    write(args.out, "evidently", "evidently", ds, encoding, {"default": res})


if __name__ == "__main__":
    main()
