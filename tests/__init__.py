"""Test suite of the site toolkit console (a package, so test packages such as tests.site do not shadow stdlib modules)."""
