"""Tests of actors/core/provider."""
