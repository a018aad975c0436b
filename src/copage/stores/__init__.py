"""Page stores: memory, SQLite, PostgreSQL."""
