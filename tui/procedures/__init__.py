"""Operator operations as async step sequences, shared by screens and the headless CLI."""
