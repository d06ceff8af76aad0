"""Generators of committed files: sql/ from the declarations, the dbt package, docs/metrics.md."""
