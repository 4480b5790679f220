"""The CLI's user-facing error type."""


class CliError(Exception):
    """A user-facing error: printed as ``spatialscout: error: <message>``, exit code 2."""
