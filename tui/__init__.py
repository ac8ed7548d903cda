"""sitetk: the Site Toolkit Console (a Textual terminal console for an experimentation site)."""

__version__ = "0.1.0"
