"""HTTP side: app factory, API, auth, metrics and health, demo Provider."""
