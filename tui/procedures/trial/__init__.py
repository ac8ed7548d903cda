"""The trial feature: a test trial network through the manager's REST API, proving the site works."""
