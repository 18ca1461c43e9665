"""Tests of actors/supervised."""
