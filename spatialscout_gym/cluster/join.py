"""Joining a Ray cluster that runs elsewhere (``--ray-address``), and where a Ray process runs.

:func:`join_ray` turns the ways joining fails (nothing listening, a token missing or refused, another
Ray or Python version) into one line (:class:`~spatialscout_gym.core.errors.ConfigError`) instead of
Ray's retries and tracebacks; :func:`node_place` names the node a Ray process runs on, by id and
network address, for the run records (``result.json``'s ``node``, ``rllib_runners.json``).
"""

from __future__ import annotations

import logging
from typing import Any

from spatialscout_gym.core.errors import ConfigError
from spatialscout_gym.core.types import natural_number

__all__ = ["ADDRESS_FORMS", "PROBE_TIMEOUT_S", "join_ray", "node_place"]

PROBE_TIMEOUT_S = 10.0
"""Seconds to wait for the head's port to accept a connection before ``ray.init`` (which retries an
unreachable head for minutes)."""

ADDRESS_FORMS = ("auto (the cluster `ray start` began on this machine), HOST:PORT (the head's GCS port, "
                 "6379 by default), ray://HOST:10001 (Ray Client); with token authentication on "
                 "(RAY_AUTH_MODE=token when the head started) export RAY_AUTH_MODE=token and the token "
                 "(RAY_AUTH_TOKEN, or the file ~/.ray/auth_token)")
"""What ``--ray-address`` accepts, for the commands' help."""


def _why(exc: BaseException) -> str:
    """The first line of ``exc`` that says something, without Ray's banner lines."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return lines[0] if lines else type(exc).__name__


def join_ray(address: str, **kwargs: Any) -> None:
    """``ray.init(address=address)`` with the dashboard off and Ray's own logging at warnings;
    ``kwargs`` go to ``ray.init``.

    Raises
    ------
    ConfigError
        One line: the cluster cannot be reached, refuses this process's token (or it has none), or
        runs another Ray or Python version.
    """
    import ray
    from ray.exceptions import AuthenticationError

    kwargs = {"include_dashboard": False, "logging_level": logging.WARNING, "log_to_driver": False, **kwargs}
    _probe(address)
    hint = ("start it with `ray start --head` (docs/rllib.md), and where it uses token authentication "
            "export RAY_AUTH_MODE=token and its token (RAY_AUTH_TOKEN, or the file ~/.ray/auth_token)")
    try:
        ray.init(address=address, **kwargs)
    except AuthenticationError as exc:
        raise ConfigError(f"--ray-address {address}: the cluster refused this process's token "
                          f"({_why(exc)}); {hint}") from None
    except ConnectionError as exc:
        raise ConfigError(f"--ray-address {address}: cannot join that Ray cluster ({_why(exc)}); {hint}") from None
    except RuntimeError as exc:
        text = str(exc)
        if "Version mismatch" in text:
            versions = " ".join(text.split())
            raise ConfigError(f"--ray-address {address}: {versions}; install the cluster's Ray and Python "
                              "versions here (or start the cluster with these)") from None
        if "auth" in text.lower() or "token" in text.lower():
            raise ConfigError(f"--ray-address {address}: {_why(exc)}; {hint}") from None
        raise
    except ValueError as exc:   # an address Ray cannot parse
        raise ConfigError(f"--ray-address {address}: {_why(exc)}; expected {ADDRESS_FORMS}") from None


def _probe(address: str) -> None:
    """One-line :class:`ConfigError` when ``HOST:PORT`` accepts no TCP connection within
    :data:`PROBE_TIMEOUT_S` (``auto`` and ``ray://`` addresses are left to Ray)."""
    import socket
    host, sep, port = address.rpartition(":")
    number = natural_number(port)
    if address == "auto" or "://" in address or not sep or number is None:
        return
    try:
        socket.create_connection((host.strip("[]"), number), timeout=PROBE_TIMEOUT_S).close()
    except OSError as exc:
        raise ConfigError(f"--ray-address {address}: nothing answers there ({exc.strerror or exc}); start the "
                          "head with `ray start --head` (docs/rllib.md) or give its address "
                          "(HOST:6379, auto on the head itself)") from None


def node_place() -> dict:
    """``{"id": node id, "address": node IP}`` of the Ray node this process runs on (inside a Ray
    worker or a driver that joined a cluster)."""
    import ray
    return {"id": ray.get_runtime_context().get_node_id(), "address": ray.util.get_node_ip_address()}
