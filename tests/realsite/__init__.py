"""Unit tests of the real-frontend harness's own parts (realsite/): no platform needed."""
