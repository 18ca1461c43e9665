"""Tests of actors/service."""
