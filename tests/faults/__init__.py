"""Tests of issue 15: faults, signals, re-runs and two operators at once."""
