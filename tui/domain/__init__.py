"""Pure models and rules of the site toolkit: no I/O, no Textual."""
