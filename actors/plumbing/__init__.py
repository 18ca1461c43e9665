"""The service's plumbing under the actors: settings, metrics, logging, the
supervisor, wake-ups and the watched registry and Provider-map files."""
