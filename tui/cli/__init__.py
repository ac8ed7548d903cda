"""Headless subcommands (`sitetk <noun> <verb>`), one module per noun."""
