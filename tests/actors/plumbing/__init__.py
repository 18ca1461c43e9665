"""Tests of actors/plumbing."""
