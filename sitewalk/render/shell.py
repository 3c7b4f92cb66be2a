"""Whether a page's HTML is an app shell, a page its scripts make: the rule of ``render=auto``."""

from __future__ import annotations

import re

from sitewalk.links import parse_html
from sitewalk.text import visible_lines

__all__ = ["SHORT", "SHORT_WITH_SIGN", "has_script", "looks_like_shell"]

# Characters of visible text under which a page with scripts is a shell. The smallest page of the
# Python 3.11 docs has 632 (search.html, whose <noscript> asks for JavaScript), the smallest
# with scripts of any Sphinx site will not be far below; an app shell has none, or a
# "Loading..." (see docs/render.md).
SHORT = 200
# ... and under which it is one when it also shows a sign of an app: an empty mount point or a
# <noscript> that mentions JavaScript.
SHORT_WITH_SIGN = 500
# The elements the usual frameworks mount an app on: React (create-react-app, Vite), Vue, Next.js,
# Nuxt, Gatsby, SvelteKit, Quasar, Angular.
_MOUNTS = "#root, #app, #__next, #__nuxt, #___gatsby, #svelte, #q-app, app-root"
# <script type> values a browser runs (HTML's JavaScript MIME types, module); JSON, templates,
# import maps and speculation rules run nothing.
_SCRIPT_TAG = re.compile(rb"<script", re.IGNORECASE)
# Elements whose text is never shown.
_NOT_SHOWN = ["script", "style", "noscript", "template"]
_RUN = frozenset({
    "", "module", "text/javascript", "application/javascript", "application/x-javascript", "text/ecmascript",
    "application/ecmascript", "text/jscript",
})


def has_script(body: bytes, encoding: str | None = None) -> bool:
    """Whether the page's bytes (in ``encoding``, UTF-8 if None) may hold a ``<script``: a page
    without one is no shell, told without parsing it (a PostgreSQL docs page, say). In an
    encoding whose bytes are not ASCII's (UTF-16) the bytes cannot tell: True."""
    try:
        ascii_bytes = "<script".encode(encoding or "utf-8") == b"<script"
    except LookupError:
        ascii_bytes = False
    return not ascii_bytes or _SCRIPT_TAG.search(body) is not None


def looks_like_shell(markup: bytes | str) -> bool:
    """Whether the page ``markup`` (UTF-8 bytes, or text) is an app shell: it runs a script, and
    its visible text (as grep reads it, :func:`sitewalk.text.visible_lines`) is under
    :data:`SHORT` characters, or under :data:`SHORT_WITH_SIGN` with an empty mount point
    (``#root``, ``#app``, ``#__next``, ..., ``<app-root>``) or a ``<noscript>`` that mentions
    JavaScript. A page without scripts is never one: nothing in it could change it."""
    tree = parse_html(markup)
    if not any((script.attributes.get("type") or "").strip().lower() in _RUN for script in tree.css("script")):
        return False
    # Most pages have far more text than a shell: their body's text without scripts and styles,
    # all in C, says so at a third of the cost of reading their visible lines.
    tree.strip_tags(_NOT_SHOWN)
    body = tree.body
    if body is None or len("".join(body.text(deep=True).split())) >= 2 * SHORT_WITH_SIGN:
        return False
    tree = parse_html(markup)
    text = sum(len(line) for line in visible_lines(tree))
    if text < SHORT:
        return True
    if text >= SHORT_WITH_SIGN:
        return False
    if any(not mount.text(deep=True).strip() for mount in tree.css(_MOUNTS)):
        return True
    return any("javascript" in noscript.text(deep=True).lower() for noscript in tree.css("noscript"))
