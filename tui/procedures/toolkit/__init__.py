"""The toolkit feature: its service template and inputs, the deployment and its waits, the key, the object store disk."""
