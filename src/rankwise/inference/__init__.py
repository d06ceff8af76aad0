"""Inference over per-user values: intervals, bootstrap, paired tests, segments, comparison tables."""
