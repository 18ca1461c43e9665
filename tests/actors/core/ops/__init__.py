"""Tests of actors/core/ops."""
