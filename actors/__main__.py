"""``python -m actors`` runs the service, like ``export-center serve``."""

from actors.cli.main import main

if __name__ == "__main__":
    main(["serve"])
