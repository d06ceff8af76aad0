"""An independent, deliberately naive oracle: plain Python loops over each user's list, straight from
the formulas in rankwise.metrics.declarations' docstring. It shares no code with either engine.

recs:  {user: [item, ...]}  in rank order (users present in the recommendations input)
truth: {user: {item: relevance}}  (users present in the ground-truth input)
Returns {user: {metric: value}} with NaN for undefined values, over the convention's users.
"""

from __future__ import annotations

import math

from rankwise.metrics.declarations import USER_LEVEL as METRICS  # only the list of names; every value is computed here

NAN = float("nan")
SUMMED = {"num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret"}
GEOMETRIC = {"gm_map", "gm_bpref"}


def universe(recs: dict, truth: dict, users: str, unjudged: str = "keep") -> set:
    chosen = {
        "union": set(recs) | set(truth), "labels": set(truth), "predictions": set(recs),
        "intersection": set(recs) & set(truth),
    }[users]
    if unjudged == "drop":
        chosen = {u for u in chosen if truth.get(u)}
    return chosen


def _constant(rule: str) -> float:
    return {"zero": 0.0, "one": 1.0}.get(rule, NAN)


def user_metrics(pred: list, labels: dict, k: int, conv, beta: float = 1.0, data_max_grade: float | None = None) -> dict:
    """``data_max_grade``: the largest relevance of the whole ground truth (ERR's g_max by default)."""
    def is_relevant(item):
        r = labels.get(item, 0.0)
        return r > 0 and r >= conv.relevance_threshold

    def gain(r):
        if r < 0:  # a pooled-but-unjudged label (negative_relevance='unjudged') earns nothing
            return 0.0
        mapped = dict(conv.gain_levels)
        if r in mapped:  # gain_levels: trec_eval's -m ndcg.<level>=<gain>
            return mapped[r]
        if r == 0:
            return 0.0
        if conv.gain == "binary":
            return 1.0 if (r > 0 and r >= conv.relevance_threshold) else 0.0
        if conv.gain == "linear":
            return float(r)
        return 2.0 ** r - 1.0

    def discount(position):  # position is 1-based
        return math.log(position + 1) / math.log(conv.log_base)

    n_rel = sum(1 for item in labels if is_relevant(item))
    # trec_eval's counts (m_num_ret.c, m_num_rel.c, m_num_rel_ret.c) and utility (m_utility.c) over the top k:
    # defined for every user, no empty rule
    retrieved = len(pred[:k])
    rel_ret = sum(1 for item in pred[:k] if is_relevant(item))
    counts = {"num_ret": float(retrieved), "num_rel": float(n_rel), "num_rel_ret": float(rel_ret),
              "utility": conv.utility_relevant_retrieved * rel_ret
              + conv.utility_nonrelevant_retrieved * (retrieved - rel_ret)
              + conv.utility_relevant_missed * (n_rel - rel_ret)
              + conv.utility_nonrelevant_missed * (conv.collection_size + rel_ret - retrieved - n_rel)}
    # rbp_resid (m_rbp_resid.c) reads no relevance: every user has it. An unjudged item is one without a label
    # of level >= 0 (a negative level is trec_eval's RELVALUE_UNJUDGED)
    p, cur_p, weights, unjudged = conv.rbp_persistence, 1.0, 0.0, 0
    for item in pred[:k]:
        if labels.get(item, -1) < 0:
            unjudged += 1
            weights += cur_p
        cur_p *= p
    counts["rbp_resid"] = cur_p + (1 - p) * weights if unjudged else 0.0
    counts |= judged_aware(pred[:k], labels, k, conv.relevance_threshold)
    judged_aware_values = {m: counts.pop(m) for m in ("bpref", "infap", "gm_bpref")}
    if n_rel == 0:
        return {m: counts.get(m, _constant(conv.empty_labels)) for m in METRICS}
    if len(pred) == 0:
        return {m: counts.get(m, _constant(conv.empty_predictions)) for m in METRICS}

    top = pred[:k]
    flags = [1 if is_relevant(item) else 0 for item in top]
    hits = sum(flags)

    candidates = set(pred) | {item for item in labels if is_relevant(item)}
    p_den = {"k": k, "min_k_len": min(k, len(pred)), "min_k_nrel": min(k, n_rel),
             "min_k_candidates": min(k, len(candidates))}[conv.precision_denominator]
    precision = hits / p_den
    recall = hits / n_rel
    b2 = beta * beta
    fbeta = (1 + b2) * precision * recall / (b2 * precision + recall) if precision + recall > 0 else 0.0

    precision_at_hits, recall_at_hits = [], []
    for i, flag in enumerate(flags):
        if flag:
            so_far = sum(flags[: i + 1])
            precision_at_hits.append(so_far / (i + 1))
            recall_at_hits.append(so_far / n_rel)
    ap_den = {
        "n_hits": hits, "n_rel": n_rel, "min_k_nrel": min(k, n_rel), "k": k, "min_k_len": min(k, len(pred)),
    }[conv.ap_denominator]
    ap = sum(precision_at_hits) / ap_den if ap_den else 0.0
    ar = sum(recall_at_hits) / ap_den if ap_den else 0.0

    searched = top if conv.rr_cutoff else pred
    first = next((i + 1 for i, item in enumerate(searched) if is_relevant(item)), None)
    rr = 1.0 / first if first else 0.0

    gains = [gain(labels[item]) if item in labels else 0.0 for item in top]  # unjudged: no gain (level 0 may have one)
    dcg = sum(g / discount(i + 1) for i, g in enumerate(gains))
    if conv.ideal == "labels":
        ideal = sorted((g for g in map(gain, labels.values()) if g > 0), reverse=True)[:k]  # trec_eval: gains > 0
    elif conv.ideal == "k_ones":
        ideal = [1.0] * k
    else:
        ideal = sorted((g for g in gains if g > 0), reverse=True)
    idcg = sum(g / discount(i + 1) for i, g in enumerate(ideal))
    ndcg = dcg / idcg if idcg > 0 else (0.0 if conv.zero_ideal == "zero" else NAN)

    m = min(k, n_rel)
    r_precision = sum(1 for item in pred[:m] if is_relevant(item)) / m

    # Moffat and Zobel 2008: RBP = (1 - p) * sum_i r_i p^(i - 1) over the ranks i of the top k, r_i in {0, 1}
    p = conv.rbp_persistence
    rbp = (1 - p) * sum(flag * p ** i for i, flag in enumerate(flags))

    # Chapelle et al. 2009: ERR = sum_r R_r / r prod_{i<r} (1 - R_i), R = (2^g - 1) / 2^g_max over the top k;
    # g_max is the largest relevance of the whole ground truth unless the convention gives one (err_scale)
    g_max = conv.err_max_grade or data_max_grade or max(labels.values(), default=1.0)
    err, reach = 0.0, 1.0
    for r, item in enumerate(top, 1):
        g = labels.get(item, 0.0)
        stop = (2.0 ** min(g, g_max) - 1.0) / 2.0 ** g_max if g > 0 else 0.0
        err += reach * stop / r
        reach *= 1.0 - stop

    # trec_eval's set measures over the top k (m_set_P.c, m_set_relative_P.c, m_set_map.c, m_set_F.c with its
    # weight 1) and relative_P (m_rel_P.c): hits over min(k, n_rel)
    set_p = rel_ret / retrieved
    set_r = rel_ret / n_rel
    set_f = 2.0 * set_p * set_r / (set_p + set_r) if rel_ret else 0.0

    # trec_eval's Rprec_mult (m_Rprec_mult.c) over the top k: c = (long)(m R + 0.9); past the list, hits / c
    cut = math.floor(conv.rprec_multiplier * n_rel + 0.9)
    rprec_mult = sum(flags[:cut]) / cut if cut > 0 else 0.0
    # trec_eval 10.0's iprec_at_recall loop (m_iprec_at_recall.c) over the top k, as written there
    def iprec_at(l):
        level = l * n_rel
        wanted = math.floor(level + 0.5) if conv.iprec_recall_count == "round" else math.floor(level + 0.9)
        if wanted > rel_ret:
            return 0.0
        int_precis = rel_ret / retrieved
        rel_so_far = rel_ret
        for i in range(retrieved, 0, -1):
            if rel_so_far <= 0:
                break
            int_precis = max(int_precis, rel_so_far / i)
            if flags[i - 1]:
                if rel_so_far == wanted:
                    return int_precis
                rel_so_far -= 1
        return int_precis

    iprec = iprec_at(conv.iprec_recall_level)
    ipt11 = sum(iprec_at(i / 10) for i in range(11)) / 11  # m_11pt_avg.c: the same loop at 11 levels
    values = counts | _trec_gain_measures(top, labels, n_rel, gain, discount, is_relevant) | {
        "rprec_mult": rprec_mult, "iprec_at_recall": iprec, "ipt11_avg": ipt11,
        "set_p": set_p, "set_recall": set_r, "set_relative_p": rel_ret / min(retrieved, n_rel),
        "set_map": set_p * set_r, "set_f": set_f, "relative_p": rel_ret / min(k, n_rel), "gm_map": ap,
        "precision": precision, "recall": recall, "fbeta": fbeta, "map": ap, "mar": ar, "mrr": rr,
        "dcg": dcg, "ndcg": ndcg, "hit_rate": 1.0 if hits else 0.0, "r_precision": r_precision, "rbp": rbp,
        "err": err,
    } | judged_aware_values
    return {m: values[m] for m in METRICS}


def _trec_gain_measures(top, labels, n_rel, gain, discount, is_relevant) -> dict:
    """trec_eval's G, binG, ndcg_rel and Rndcg over the top k, the loops of m_G.c, m_binG.c, m_ndcg_rel.c and
    m_Rndcg.c as written there: a table of (gain, documents judged at that
    level) sorted by gain (gain_init.c; here by the exact gain), walked from the largest gain down for the ideal."""
    levels = {}
    for r in labels.values():
        if r >= 0:  # a negative level is not judged (trec_eval's RELVALUE_UNJUDGED): no place in the gain table
            levels[r] = levels.get(r, 0) + 1
    table = sorted(((gain(r), n) for r, n in levels.items()), key=lambda t: t[0])
    ret = [gain(labels[item]) if item in labels else 0.0 for item in top]
    num_ret = len(ret)

    def ideal():  # the ideal gain at each position 0, 1, ...: 0.0 once the table is used up
        for g, n in reversed(table):
            for _ in range(n):
                yield g
        while True:
            yield 0.0

    log2 = math.log2
    # G (m_G.c)
    ideal_gains = ideal()
    results_g = sum_results = sum_ideal = sum_cost = 0.0
    ig = next(ideal_gains)
    i = 0
    while i < num_ret or ig > 0:
        if i < num_ret:
            sum_results += ret[i]
            sum_cost += max(ig, 1.0) if ig > 0 else 1.0
            if ret[i] != 0:
                results_g += ret[i] / log2(2 + sum_cost - sum_results)
        if ig > 0:
            sum_ideal += ig
        ig = next(ideal_gains)
        i += 1
    g_value = results_g / sum_ideal if sum_ideal > 0 else 0.0
    # binG (m_binG.c)
    rel_so_far, bing = 0, 0.0
    for i, item in enumerate(top):
        if is_relevant(item):
            rel_so_far += 1
            bing += 1.0 / log2(3 + i - rel_so_far)
    # ndcg_rel (m_ndcg_rel.c) and Rndcg (m_Rndcg.c): DCG and the ideal DCG after each position
    positive = []
    for g, n in reversed(table):
        positive += [g] * n if g > 0 else []
    n_pos = len(positive)
    dcg_at, idcg_at = [0.0], [0.0]
    for i in range(max(num_ret, n_pos)):
        dcg_at.append(dcg_at[-1] + (ret[i] / discount(i + 1) if i < num_ret and ret[i] != 0 else 0.0))
        idcg_at.append(idcg_at[-1] + (positive[i] / discount(i + 1) if i < n_pos else 0.0))
    total, rel_ret = 0.0, 0
    for i in range(num_ret):
        if ret[i] > 0:
            total += dcg_at[i + 1] / idcg_at[min(i + 1, n_pos)]
            rel_ret += 1
    ndcg_rel = 0.0
    if n_pos:
        total += (n_pos - rel_ret) * dcg_at[num_ret] / idcg_at[n_pos]
        ndcg_rel = total / n_pos if total > 0 else 0.0
    points = [dcg_at[min(m, num_ret)] / idcg_at[m] for m in range(1, n_pos + 1)
              if m == n_pos or positive[m] != positive[m - 1]]
    if num_ret > n_pos + 1 and n_pos:
        points.append(dcg_at[num_ret] / idcg_at[n_pos])
    rndcg = sum(points) / len(points) if points else 0.0
    return {"g": g_value, "bin_g": bing / n_rel, "ndcg_rel": ndcg_rel, "rndcg": rndcg}
def judged_aware(top: list, labels: dict, k: int, threshold: float) -> dict:
    """trec_eval's loops over the ranked list (m_bpref.c, m_infap.c, m_num_nonrel_judged_ret.c, m_unjudged.c),
    here over the top k: a label >= 0 is judged (relevant when > 0 and >= threshold, else non-relevant), a label
    < 0 is in the pool but not judged, an item without a label is not in the pool. ir_measures' Judged@k: items
    with any label / min(k, list length)."""
    def kind(item):
        if item not in labels:
            return "nonpool"
        r = labels[item]
        return "unjudged" if r < 0 else ("rel" if r > 0 and r >= threshold else "nonrel")

    num_rel = sum(1 for item in labels if kind(item) == "rel")
    num_nonrel = sum(1 for item in labels if kind(item) == "nonrel")
    bpref = inf_ap = 0.0
    rel_so_far = nonrel_so_far = pool_unjudged_so_far = 0
    for j, item in enumerate(top):
        what = kind(item)
        if what == "nonpool":
            continue
        if what == "unjudged":
            pool_unjudged_so_far += 1
            continue
        if what == "nonrel":
            nonrel_so_far += 1
            continue
        rel_so_far += 1
        bpref += 1.0 - min(nonrel_so_far, num_rel) / min(num_nonrel, num_rel) if nonrel_so_far > 0 else 1.0
        if j == 0:
            inf_ap += 1.0
        else:
            fj = float(j)
            inf_ap += 1.0 / (fj + 1.0) + (fj / (fj + 1.0)) * (
                (rel_so_far - 1 + nonrel_so_far + pool_unjudged_so_far) / fj) * (
                (rel_so_far - 1 + 0.00001) / (rel_so_far - 1 + nonrel_so_far + 2 * 0.00001))
    if num_rel:
        bpref /= num_rel
        inf_ap /= num_rel
    unjudged = sum(1 for item in top if kind(item) in ("nonpool", "unjudged"))
    labelled = sum(1 for item in top if item in labels)
    return {"num_nonrel_judged_ret": float(nonrel_so_far), "unj": unjudged / k,
            "judged": labelled / len(top) if top else NAN, "bpref": bpref, "gm_bpref": bpref, "infap": inf_ap}


def evaluate(recs: dict, truth: dict, ks, conv, beta: float = 1.0) -> dict:
    """{user: {"metric@k": value}} for every user of the convention's universe."""
    out = {}
    data_max_grade = max((r for labels in truth.values() for r in labels.values()), default=None)
    for user in universe(recs, truth, conv.users, conv.unjudged):
        row = {}
        for k in ks:
            values = user_metrics(recs.get(user, []), truth.get(user, {}), k, conv, beta, data_max_grade)
            row.update({f"{m}@{k}": v for m, v in values.items()})
        out[user] = row
    return out


def summary(per_user: dict, ks, conv, beta: float = 1.0) -> dict:
    """{(metric, k): (mean, n_users)}; F-beta is the F of the means when f_aggregation='of_means'."""
    out = {}
    for k in ks:
        for m in METRICS:
            values = [v[f"{m}@{k}"] for v in per_user.values()]
            defined = [x for x in values if not math.isnan(x)]
            if m in SUMMED:  # trec_eval's 'all' line of a count is its sum
                out[(m, k)] = (sum(defined) if defined else NAN), len(defined)
            elif m in GEOMETRIC:  # m_gm_map.c / meas_avg.c: exp of the mean of log(max(v, MIN_GEO_MEAN = .00001))
                logs = [math.log(max(x, 0.00001)) for x in defined]
                out[(m, k)] = (math.exp(sum(logs) / len(logs)) if logs else NAN), len(logs)
            else:
                out[(m, k)] = mean(values)
        if conv.f_aggregation == "of_means":
            (p, _), (r, _), (_, n) = out[("precision", k)], out[("recall", k)], out[("fbeta", k)]
            b2 = beta * beta
            f = (1 + b2) * p * r / (b2 * p + r) if p + r > 0 else (NAN if math.isnan(p + r) else 0.0)
            out[("fbeta", k)] = (f, n)
    return out


def mean(values) -> tuple[float, int]:
    """Mean over defined (non-NaN) values and how many there were."""
    defined = [v for v in values if not math.isnan(v)]
    return (sum(defined) / len(defined) if defined else NAN), len(defined)
