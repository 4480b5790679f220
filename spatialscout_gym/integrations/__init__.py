"""Bridges to other evaluation frameworks. Nothing here is imported by ``import spatialscout_gym``:
each module imports its framework and is loaded only by that framework or a user who asks for it
(``spatialscout_gym.integrations.inspect_task``: Inspect AI, docs/inspect.md)."""
