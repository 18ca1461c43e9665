"""Persistence: schema per dialect, store interface, transitions, SQLite and MySQL stores."""
