"""The browser trajectory viewer: ``spatialscout view DIR`` (docs/protocol.md section 7).

:mod:`.data` reads a run directory into one JSON document; :mod:`.server` serves it with the static
page in ``static/`` from Python's ``http.server`` or writes both as a static site. No build step.
"""
