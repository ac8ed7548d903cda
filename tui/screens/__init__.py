"""One module per screen of the console."""
