"""Tests of actors/core/http."""
