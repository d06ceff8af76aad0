"""A naive oracle for the beyond-accuracy metrics: plain Python over dicts and sets, pairs enumerated,
sets intersected, every catalog item listed. It shares no code with rankwise.engines.beyond or the SQL.

recs:     {user: [item, ...]} in rank order (an empty list: a user with no recommendations)
train:    [(user, item), ...]
items:    list of item ids or None
features: {item: {feature: value}} or None
truth:    {user: {item: relevance}} or None
scores:   {user: [score, ...]} parallel to recs, or None
"""

from __future__ import annotations

import math
from itertools import combinations, permutations

NAN = float("nan")


def _pop(train, item, how):
    if how == "users":
        return len({u for u, i in train if i == item})
    return sum(1 for _, i in train if i == item)


def _total(train, how):
    return len({u for u, _ in train}) if how == "users" else len(train)


def _catalog(recs, train, items, k, conv):
    if conv.catalog == "recommended":
        return {i for lst in recs.values() for i in lst[:k]}
    if conv.catalog == "items" and items is not None:
        return set(items)
    return {i for _, i in train}


def _tail(train, conv):
    """The set of train items in the long tail (cold items handled by the caller)."""
    train_items = sorted({i for _, i in train})
    pop = {i: _pop(train, i, conv.popularity) for i in train_items}
    if conv.long_tail == "head_share":
        head, held, total = set(), 0, sum(pop.values())
        for i in sorted(train_items, key=lambda i: (-pop[i], i)):
            if held < conv.long_tail_ratio * total:
                head.add(i)
            held += pop[i]
        return set(train_items) - head
    if conv.long_tail_ratio > 1:
        return {i for i in train_items if pop[i] <= conv.long_tail_ratio}
    n = max(math.floor(conv.long_tail_ratio * len(train_items)), 1)
    return set(sorted(train_items, key=lambda i: (pop[i], i))[:n])


def _cos(a, b):
    dot = sum(v * b.get(f, 0.0) for f, v in a.items())
    return dot / (math.sqrt(sum(v * v for v in a.values())) * math.sqrt(sum(v * v for v in b.values())))


def user_values(recs, train, k, conv, items=None, features=None, truth=None) -> dict:
    """{user: {metric: value}} at cutoff k; NaN = undefined."""
    train_items = {i for _, i in train}
    total = _total(train, conv.popularity)
    tail = _tail(train, conv)
    counts = sorted({_pop(train, i, conv.serendipity_popularity) for i in train_items}, reverse=True)
    catalog_n = len(_catalog(recs, train, items, k, conv))
    out = {}
    for user, lst in recs.items():
        top = lst[:k]
        cold = [i not in train_items for i in top]
        # novelty and arp
        kept = [i for i, c in zip(top, cold) if not (c and conv.cold_items == "drop")]
        info = []
        for i in kept:
            if i not in train_items and conv.cold_items == "zero_novelty":
                info.append(0.0)
                continue
            p = max(_pop(train, i, conv.popularity), 1) / total
            if conv.novelty_normalize == "log_users":
                info.append(math.log2(1 / p) / math.log2(total) if total > 1 else NAN)
            else:
                info.append(-math.log(p, conv.info_log_base))
        arps = [_pop(train, i, conv.arp_popularity) for i in kept]

        def mean(values, n):
            den = k if conv.list_denominator == "k" else n
            return sum(values) / den if den else NAN

        tails = [1.0 if (i in tail or (i not in train_items and conv.long_tail == "head_share")) else 0.0 for i in top]
        # ild: every unordered pair of items that have a nonzero feature vector
        if features is None:
            ild = NAN
        else:
            vec = [features[i] for i in top if i in features and any(v != 0 for v in features[i].values())]
            m = len(vec)
            if m < 2:
                ild = 0.0 if conv.ild_short == "zero" else NAN
            else:
                dist = sum(1 - _cos(a, b) for a, b in combinations(vec, 2))
                ild = dist / (m * (m - 1) / 2 if conv.ild_denominator == "pairs" else m)
        # serendipity (RecTools family)
        labels = (truth or {}).get(user, {})
        seren = []
        for rank, i in enumerate(top, start=1):
            rel = 1.0 if labels.get(i, 0) > 0 and labels.get(i, 0) >= conv.relevance_threshold else 0.0
            p_rank = (catalog_n + 1 - rank) / catalog_n
            if i in train_items:
                poprank = counts.index(_pop(train, i, conv.serendipity_popularity)) + 1
                p_pop = (catalog_n + 1 - poprank) / catalog_n
            else:
                p_pop = 0.0
            seren.append(max(p_rank - p_pop, 0.0) * rel)
        out[user] = {"n_items": len(top), "novelty": mean(info, len(kept)), "arp": mean(arps, len(kept)),
                     "long_tail_share": mean(tails, len(top)), "ild": ild,
                     "serendipity": mean(seren, len(top))}
    return out


def catalog_values(recs, train, k, conv, items=None, scores=None) -> dict:
    """{metric: value} at cutoff k; NaN = undefined."""
    lists = {u: lst[:k] for u, lst in recs.items() if lst[:k]}
    recommended = {i for lst in lists.values() for i in lst}
    catalog = _catalog(recs, train, items, k, conv)
    # coverage: sets
    covered = len(recommended & catalog) if conv.catalog_outside == "ignore" else len(recommended)
    size = len(catalog) + conv.catalog_padding
    coverage = {"count": covered, "ratio": covered / size if size else NAN,
                "percent": 100 * covered / size if size else NAN}[conv.coverage_scale]
    # exposure of every item, zeros listed
    everyone = recommended if conv.gini == "recommended_n1" else (catalog | recommended)
    expo = [sum(1 for lst in lists.values() if i in lst) for i in everyone]
    if conv.gini != "recommended_n1":
        expo += [0] * conv.catalog_padding
    c = sorted(expo)
    n, total = len(c), sum(c)
    den = n if conv.gini == "catalog" else n - 1
    gini = sum((2 * j - n - 1) * cj for j, cj in enumerate(c, start=1)) / (den * total) if den > 0 and total else NAN
    if conv.gini == "catalog_n1_complement":
        gini = 1 - gini
    probs = [x / total for x in c if x > 0] if total else []
    entropy = -sum(p * math.log(p, conv.info_log_base) for p in probs) if probs else NAN
    if conv.entropy_normalize == "distinct" and probs:
        entropy /= len(probs)
    # personalization: ordered pairs of users, lists intersected
    users = list(lists)
    U = len(users)
    if U < 2:
        pers = NAN
    else:
        overlap = sum(len(set(lists[a]) & set(lists[b])) for a, b in permutations(users, 2))
        if conv.personalization_lists == "full":  # Evidently: subtracts U k instead of sum n_u
            overlap += sum(len(lst) for lst in lists.values()) - U * k
        pers = 1 - overlap / (k * U * (U - 1))
    # score entropy: softmax of every pooled top-k score
    if scores is None:
        score_entropy = NAN
    else:
        pooled = [s for u, lst in recs.items() for s in scores[u][:k]]
        if pooled:
            z = sum(math.exp(s) for s in pooled)
            score_entropy = -sum(math.exp(s) / z * math.log(math.exp(s) / z) for s in pooled)
        else:
            score_entropy = NAN
    return {"item_coverage": coverage, "gini": gini, "exposure_entropy": entropy, "personalization": pers,
            "score_entropy": score_entropy, "n_users": U}


def item_values(recs, train, k, conv, items=None) -> dict:
    """{item: (exposure, popularity)} over C ∪ recommended at cutoff k."""
    lists = {u: lst[:k] for u, lst in recs.items()}
    everyone = _catalog(recs, train, items, k, conv) | {i for lst in lists.values() for i in lst}
    return {i: (sum(1 for lst in lists.values() if i in lst), _pop(train, i, conv.popularity)) for i in everyone}
