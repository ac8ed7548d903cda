"""`SharedStylesheet`: a Textual stylesheet whose parsed rules are kept for the whole process.

Textual parses an app's CSS (the DEFAULT_CSS of every widget class mounted, the app's and the
screens' `.tcss` files) per `Stylesheet` object: when the app starts, and all of it again each
time a screen with CSS of its own is shown for the first time (`App._load_screen_css` calls
`Stylesheet.reparse`, which parses every source into a new `Stylesheet` with an empty parse
cache). The rules parsed from one source depend only on its text, where it was read from, its
priority, its scope and the CSS variables (the theme's colours): Textual itself keeps them in a
cache of the stylesheet (`Stylesheet._parse_rules`) and hands the same rule objects out again
when it parses that stylesheet again. Here that cache is one per set of variables for the
process: a screen shown for the first time parses only its own CSS, and every app started later
in the same process (a test's, a snapshot scene's) parses nothing that was parsed before. The
console started on the marketplace screen, six times in one process: 240 parses of
a CSS source and 0.33 CPU-s before, 29 parses (the first start's) and 0.04 CPU-s after.
"""

from __future__ import annotations

from textual.cache import LRUCache
from textual.css.model import RuleSet
from textual.css.stylesheet import Stylesheet

__all__ = ["SharedStylesheet", "shared_stylesheet"]

#: sources whose parsed rules are kept per set of variables (the console has some 80: widget
#: classes' DEFAULT_CSS and its own files; Textual's own cache keeps 64 per stylesheet)
CACHE_SIZE = 512

_caches: dict[tuple[tuple[str, str], ...], LRUCache[tuple[object, ...], list[RuleSet]]] = {}


def _cache_for(variables: dict[str, str]) -> LRUCache[tuple[object, ...], list[RuleSet]]:
    """The process's parsed rules for CSS read with these variables."""
    key = tuple(sorted(variables.items()))
    cache = _caches.get(key)
    if cache is None:
        cache = _caches[key] = LRUCache(CACHE_SIZE)
    return cache


class SharedStylesheet(Stylesheet):
    """A `Stylesheet` whose parse cache is the process's one for its variables (module docstring)."""

    def __init__(self, *, variables: dict[str, str] | None = None) -> None:
        super().__init__(variables=variables)
        self._parse_cache = _cache_for(self._variables)

    def set_variables(self, variables: dict[str, str]) -> None:
        # Textual empties the parse cache of the old variables here; the shared one stays whole
        # (another app may still use those variables) and the stylesheet takes the new variables' one
        self._parse_cache = LRUCache(1)
        super().set_variables(variables)
        self._parse_cache = _cache_for(self._variables)

    def copy(self) -> Stylesheet:
        stylesheet = SharedStylesheet(variables=self._variables.copy())
        stylesheet.source = self.source.copy()
        return stylesheet

    def reparse(self) -> None:
        """As `Stylesheet.reparse` (parse every source into a new stylesheet, keep the result only
        if all of it parsed), the new stylesheet sharing the parsed rules."""
        stylesheet = SharedStylesheet(variables=self._variables)
        for read_from, (css, is_defaults, tie_breaker, scope) in self.source.items():
            stylesheet.add_source(css, read_from=read_from, is_default_css=is_defaults, tie_breaker=tie_breaker,
                                  scope=scope)
        try:
            stylesheet.parse()
        except Exception:
            self._invalid_css.update(stylesheet._invalid_css)
            raise
        self._rules = stylesheet.rules
        self._rules_map = None
        self.source = stylesheet.source
        self._require_parse = False


def shared_stylesheet(stylesheet: Stylesheet) -> SharedStylesheet:
    """`stylesheet` (an app's, before it has read anything) as a `SharedStylesheet`."""
    shared = SharedStylesheet(variables=stylesheet._variables)
    shared.source = stylesheet.source.copy()
    shared._require_parse = bool(shared.source)
    return shared
