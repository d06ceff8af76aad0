"""Writing results where people read them: files, DuckDB, PostgreSQL, Delta, MLflow."""
