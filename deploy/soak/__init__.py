"""The soaks: many exports on several instances for minutes, figures and checks printed;
what they share is ``cluster.py``."""
