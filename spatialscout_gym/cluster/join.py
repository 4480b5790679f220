"""Joining a Ray cluster that runs elsewhere (``--ray-address``), and where a Ray process runs.

:func:`join_ray` turns the ways joining fails (nothing listening, a token missing or refused, another
Ray or Python version) into one line (:class:`~spatialscout_gym.core.errors.ConfigError`) instead of
Ray's retries and tracebacks (Ray's own log lines while it tries, a score of ``gcs_client`` retries
for a refused token, are kept off the terminal and read for the reason); :func:`node_place` names the node a Ray process runs on, by id and
network address, for the run records (``result.json``'s ``node``, ``rllib_runners.json``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import tempfile
from typing import Any, Callable, Iterator

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


_REFUSED_TOKEN = re.compile(r"InvalidAuthToken|Unauthenticated|invalid authentication token|authentication token",
                            re.IGNORECASE)
"""What Ray's client logs when the cluster refuses the token sent, or that none was sent."""


@contextlib.contextmanager
def _ray_log_kept() -> Iterator[Callable[[], str]]:
    """File descriptor 2 goes to a temporary file for the block (Ray's C++ client logs each retry
    there); yields a function that reads what was logged."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as log:
        os.dup2(log.fileno(), 2)

        def read() -> str:
            sys.stderr.flush()
            log.seek(0)
            return log.read().decode("utf-8", errors="replace")
        try:
            yield read
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


def _token_source() -> str:
    """Where this process's Ray token comes from, or that it has none."""
    if os.environ.get("RAY_AUTH_TOKEN"):
        return "RAY_AUTH_TOKEN"
    if os.environ.get("RAY_AUTH_TOKEN_PATH"):
        return f"the file {os.environ['RAY_AUTH_TOKEN_PATH']} (RAY_AUTH_TOKEN_PATH)"
    if os.path.isfile(os.path.expanduser("~/.ray/auth_token")):
        return "the file ~/.ray/auth_token"
    return "none: RAY_AUTH_TOKEN is unset and ~/.ray/auth_token does not exist"


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
    refused = (f"--ray-address {address}: the cluster refused the token (this process's token: "
               f"{_token_source()})")
    token_hint = ("give this process the token the head was started with: export RAY_AUTH_MODE=token and "
                  "RAY_AUTH_TOKEN, or put it in ~/.ray/auth_token")
    try:
        with _ray_log_kept() as logged:
            try:
                ray.init(address=address, **kwargs)
            finally:
                said = logged()
    except AuthenticationError as exc:
        raise ConfigError(f"{refused}: {_why(exc).split('. ')[0]}; {token_hint}") from None
    except ConnectionError as exc:
        if _REFUSED_TOKEN.search(said):
            raise ConfigError(f"{refused}; {token_hint}") from None
        raise ConfigError(f"--ray-address {address}: cannot join that Ray cluster ({_why(exc)}); {hint}") from None
    except RuntimeError as exc:
        text = str(exc)
        if "Version mismatch" in text:
            versions = " ".join(text.split())
            raise ConfigError(f"--ray-address {address}: {versions}; install the cluster's Ray and Python "
                              "versions here (or start the cluster with these)") from None
        if "auth" in text.lower() or "token" in text.lower() or _REFUSED_TOKEN.search(said):
            raise ConfigError(f"{refused}: {_why(exc).split('. ')[0]}; {token_hint}") from None
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
