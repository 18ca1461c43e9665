"""Tests of actors/core/rocketmq."""
