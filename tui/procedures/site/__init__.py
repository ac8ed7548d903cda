"""The site feature: core.yaml read, filled, checked, edited, vault-encrypted and submitted to the sites repository."""
