"""The engines behind one protocol (engines.protocol): Polars, DuckDB, Spark, PostgreSQL."""
