"""End-to-end tests against a real OpenNebula frontend (`make test-real`, never `make test`)."""
