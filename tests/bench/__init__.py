"""Tests of jurist bench (jurist.benchmark)."""
