"""Browser pages over run directories: ``spatialscout view`` (step through an episode) and
``spatialscout play`` (a person plays an episode with the ten tools). Plain HTML/CSS/JS files in
``static/`` served by the standard library's :mod:`http.server` on 127.0.0.1; no build step."""
