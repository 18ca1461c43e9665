"""Tests of actors/cli."""
