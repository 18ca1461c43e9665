"""Tests of actors/core/xlsx."""
