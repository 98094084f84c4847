"""pyevidence serve: a read-only web page over one tenant and one revision of a store.

``serve.py`` is the command (no web dependency is imported until it runs), ``app.py``
the Starlette application, ``text.py`` how untrusted text is shown (visible bidi
controls, matched tokens, which sources become links), ``templates/`` and
``static/`` the HTML and its one stylesheet. See docs/web.md.
"""
