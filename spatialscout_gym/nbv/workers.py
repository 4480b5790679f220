"""``NBVWorkerVectorEnv``: the NBV vector env spread over worker processes, one
:class:`~spatialscout_gym.nbv.vector.NBVVectorEnv` chunk per process.

On a CPU machine one process renders with software Vulkan and runs the Python of its sub-envs on
one core; ``num_workers`` processes use that many cores. Unlike one process per env
(``gymnasium.vector.AsyncVectorEnv``), each worker steps its whole chunk per message, so the
per-step synchronisation is paid once per chunk, not once per env.

``gym.make_vec("SpatialScout/NBV-v0", num_envs=N, vectorization_mode="vector_entry_point",
num_workers=W)`` builds it (``num_workers`` 1, the default, gives the one-process
``NBVVectorEnv``). Sub-env ``i`` of ``reset(seed=s)`` is seeded with ``s + i`` whatever the
split, so the results equal those of ``NBVVectorEnv`` and of N single envs for the same seeds.
Every action is checked in the parent before any worker steps, so a bad action moves no sub-env.
A worker ends with the process that started it, ``kill -9`` included
(:func:`~spatialscout_gym.core.lifetime.exit_with_parent`).
Each worker sets ``LP_NUM_THREADS=0`` unless it is set already (lavapipe then rasterises on the
worker's thread: with one worker per core that is faster, and the pictures are the same).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import traceback
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any, cast

import numpy as np
import numpy.typing as npt
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from spatialscout_gym.core.lifetime import started_from_main_thread
from spatialscout_gym.nbv.config import LaidOutObservation

__all__ = ["NBVWorkerVectorEnv", "make_nbv_vector_env", "agreed_spaces"]


def make_nbv_vector_env(num_envs: int = 1, *, num_workers: int = 1, **kwargs: Any) -> VectorEnv:
    """The vector entry point of ``SpatialScout/NBV-v0``: :class:`NBVVectorEnv` in this process
    (``num_workers`` 1) or :class:`NBVWorkerVectorEnv` over ``num_workers`` processes."""
    if isinstance(num_workers, bool) or not isinstance(num_workers, (int, np.integer)) or int(num_workers) < 1:
        raise ValueError(f"num_workers must be an integer >= 1 (1: one process), got {num_workers!r}")
    if int(num_workers) == 1:
        from spatialscout_gym.nbv.vector import NBVVectorEnv
        return NBVVectorEnv(num_envs, **kwargs)
    return NBVWorkerVectorEnv(num_envs, num_workers=num_workers, **kwargs)


def _worker(conn: Any, num_envs: int, kwargs: dict, parent_pid: int | None = None,
            death_signal: bool = False) -> None:
    """A worker process: one ``NBVVectorEnv`` of ``num_envs`` sub-envs, driven over ``conn``; it
    ends with ``parent_pid`` (``kill -9`` of the parent included)."""
    if parent_pid is not None:
        from spatialscout_gym.core.lifetime import exit_with_parent
        exit_with_parent(parent_pid, death_signal)
    # one worker per core: Mesa's software rasteriser renders on the worker's own thread (its
    # helper threads would only compete with the other workers; same pictures), unless the user
    # set LP_NUM_THREADS; no effect on a GPU's Vulkan driver
    os.environ.setdefault("LP_NUM_THREADS", "0")
    try:
        from spatialscout_gym.nbv.vector import NBVVectorEnv
        venv = NBVVectorEnv(num_envs, **kwargs)
        # the parent asks for the spaces instead of restating how they are built
        conn.send(("ok", {"observation_space": venv.single_observation_space,
                          "action_space": venv.single_action_space, "config": venv.config}))
        while True:
            cmd, data = conn.recv()
            out: tuple[object, ...]   # step's five-tuple or reset's pair, sent back as it is
            if cmd == "step":
                out = venv.step(data)
            elif cmd == "reset":
                out = venv.reset(seed=data[0], options=data[1])
            elif cmd == "action_masks":
                out = (venv.action_masks(),)
            else:  # close
                venv.close()
                conn.send(("ok", None))
                return
            conn.send(("ok", out))
    except (KeyboardInterrupt, EOFError):
        return
    except BaseException as exc:  # reported to the parent, which raises it
        conn.send(("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"))


def _merge_infos(parts: list[dict], sizes: list[int]) -> dict:
    """One vector info dict from the workers' (Gymnasium's layout: ``info[k]`` an array over
    sub-envs, ``info["_k"]`` the mask of sub-envs that have ``k``; nested dicts likewise)."""
    keys: list[str] = []
    for p in parts:
        keys += [k for k in p if k not in keys]
    out: dict = {}
    for k in keys:
        present = [p.get(k) for p in parts]
        if any(isinstance(v, dict) for v in present if v is not None):
            out[k] = _merge_infos([v if isinstance(v, dict) else {} for v in present], sizes)
            continue
        # as Gymnasium builds it in one process: the dtype of the first sub-env that has the key
        # (a later None in a float array becomes NaN), zeros (or None) where a sub-env has none
        example = next(np.asarray(v) for v in present if v is not None)
        merged = np.full((sum(sizes), *example.shape[1:]), None, object) if example.dtype == object \
            else np.zeros((sum(sizes), *example.shape[1:]), example.dtype)
        start = 0
        for v, n in zip(present, sizes):
            if v is not None:
                merged[start:start + n] = v
            start += n
        out[k] = merged
    return out


def _concat(chunks: list[LaidOutObservation]) -> LaidOutObservation:
    """The workers' observation batches as one (a dict of arrays, or one array for the
    ``"image"`` and ``"flat"`` observation layouts)."""
    if isinstance(chunks[0], dict):
        return {k: np.concatenate([c[k] for c in chunks]) for k in chunks[0]}
    return np.concatenate(cast("list[np.ndarray]", chunks))   # every worker has the first one's layout


def agreed_spaces(replies: list[dict]) -> dict:
    """The workers' start-up replies (``observation_space``, ``action_space``, ``config``), which
    must all be equal; raises ``RuntimeError`` naming the first worker that differs and how."""
    first = replies[0]
    for i, reply in enumerate(replies[1:], start=1):
        differs = [k for k in ("observation_space", "action_space", "config") if reply[k] != first[k]]
        if differs:
            k = differs[0]
            raise RuntimeError(f"NBV workers disagree on their {k.replace('_', ' ')}: worker 0 has {first[k]}, "
                               f"worker {i} has {reply[k]}; give every worker the same settings")
    return first


class NBVWorkerVectorEnv(VectorEnv):
    """N NBV sub-envs in ``num_workers`` processes (chunks as even as possible).

    Parameters
    ----------
    num_envs : int
    num_workers : int
        Worker processes (at most ``num_envs``); one per CPU core is the usual choice.
    autoreset_mode : AutoresetMode or str
        As :class:`~spatialscout_gym.nbv.vector.NBVVectorEnv` (``"NextStep"`` or
        ``"SameStep"``).
    context : str, optional
        ``multiprocessing`` start method. None (default): ``"fork"`` while this process has not
        imported SAPIEN (nothing of a Vulkan device to copy; works from any script), else
        ``"spawn"`` (then the calling script needs the usual ``if __name__ == "__main__":`` guard).
    **kwargs
        Passed to every worker's ``NBVVectorEnv`` (:func:`~spatialscout_gym.nbv.wrapper.make_nbv_env`
        arguments).
    """

    def __init__(self, num_envs: int = 2, *, num_workers: int = 2,
                 autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
                 context: str | None = None,
                 receive_timeout_s: float = 600.0, **kwargs: Any) -> None:
        if int(num_envs) < 1 or int(num_workers) < 1:
            raise ValueError(f"num_envs and num_workers must be >= 1, got {num_envs} and {num_workers}")
        self.num_envs = int(num_envs)
        workers = min(int(num_workers), self.num_envs)
        base, extra = divmod(self.num_envs, workers)
        self.sizes = [base + (i < extra) for i in range(workers)]
        self.offsets = [int(x) for x in np.cumsum([0, *self.sizes[:-1]])]
        mode = AutoresetMode(autoreset_mode)
        self.metadata = {"autoreset_mode": mode}
        # always spawn (unless asked): fork-or-spawn by import history made scripts work or crash by chance
        ctx = mp.get_context(context or "spawn")
        self.receive_timeout_s = float(receive_timeout_s)
        self.closed = False
        self._conns: list[Connection] = []
        self._procs: list[BaseProcess] = []
        for n in self.sizes:
            parent, child = ctx.Pipe()
            # typeshed's BaseContext (what get_context(str) returns) omits Process, which every real context has
            proc = ctx.Process(  # type: ignore[attr-defined]
                target=_worker, args=(child, n, dict(kwargs, autoreset_mode=mode), os.getpid(),
                                      started_from_main_thread()), daemon=True)
            proc.start()
            child.close()
            self._conns.append(parent)
            self._procs.append(proc)
        self._closed = False
        # the spaces and the parent's action check come from the workers' first reply
        try:
            started = agreed_spaces(self._gather())
        except RuntimeError:
            self.close(terminate=True)
            raise
        self._config = started["config"]
        self.single_observation_space = started["observation_space"]
        self.single_action_space = started["action_space"]
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)

    def _gather(self) -> list[Any]:
        results, errors = [], []
        for i, conn in enumerate(self._conns):
            try:
                if not conn.poll(self.receive_timeout_s):   # a hung worker must not hang the trainer
                    raise TimeoutError
                status, out = conn.recv()
            except TimeoutError:
                status, out = "error", f"worker {i} sent nothing for {self.receive_timeout_s:g} s (receive_timeout_s)"
            except (EOFError, OSError):     # a killed worker's pipe reads as EOF or as a reset connection
                status, out = "error", (f"worker {i} exited (exit code {self._procs[i].exitcode}); workers are "
                                        f"spawned, so a script that builds this env must do so under "
                                        f"`if __name__ == \"__main__\":`")
            if status != "ok":
                errors.append(f"worker {i}: {out}")
            results.append(out)
        if errors:
            self._fail(errors)
        return results

    def _fail(self, errors: list[str]) -> None:
        """Close the env (terminating the workers) and raise one error naming each failed worker."""
        self.close(terminate=True)
        raise RuntimeError("an NBV worker process failed; the vector env is closed:\n" + "\n".join(errors))

    def _send(self, messages: list[Any]) -> None:
        """One message to each worker; a worker that has died (its pipe is broken) closes the env
        with the same one-line error as a worker that does not reply."""
        dead = []
        for i, (conn, message) in enumerate(zip(self._conns, messages)):
            try:
                conn.send(message)
            except (BrokenPipeError, EOFError, OSError):
                dead.append(f"worker {i}: exited (exit code {self._procs[i].exitcode}) before it took a message")
        if dead:
            self._fail(dead)

    def _chunks(self, values: Any) -> list[Any]:
        return [values[o:o + n] for o, n in zip(self.offsets, self.sizes)]

    def reset(self, *, seed: int | list[int | None] | None = None, options: dict | None = None
              ) -> tuple[LaidOutObservation, dict[str, Any]]:
        if seed is None or isinstance(seed, (int, np.integer)):
            seeds = [None if seed is None else int(seed) + o for o in self.offsets]
        else:
            if len(seed) != self.num_envs:
                raise ValueError(f"reset(seed=[...]) needs {self.num_envs} seeds, got {len(seed)}")
            seeds = self._chunks(list(seed))
        self._send([("reset", (s, options)) for s in seeds])
        parts = self._gather()
        obs = _concat([p[0] for p in parts])
        return obs, _merge_infos([p[1] for p in parts], self.sizes)

    def step(self, actions: npt.ArrayLike
             ) -> tuple[LaidOutObservation, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        from spatialscout_gym.nbv.motion import motion_args
        actions = np.asarray(actions)
        if len(actions) != self.num_envs:
            raise ValueError(f"step needs {self.num_envs} actions, got {len(actions)}")
        for a in actions:      # every action is checked before any worker steps
            motion_args(self._config, a)
        self._send([("step", chunk) for chunk in self._chunks(actions)])
        parts = self._gather()
        obs = _concat([p[0] for p in parts])
        rewards, terminated, truncated = (np.concatenate([p[i] for p in parts]) for i in (1, 2, 3))
        return obs, rewards, terminated, truncated, _merge_infos([p[4] for p in parts], self.sizes)

    def action_masks(self) -> np.ndarray:
        """Shape (num_envs, n) bool: every sub-env's action mask (:meth:`NBVVectorEnv.action_masks
        <spatialscout_gym.nbv.vector.NBVVectorEnv.action_masks>`), in sub-env order."""
        self._send([("action_masks", None)] * len(self._conns))
        return np.concatenate([p[0] for p in self._gather()])

    def close(self, terminate: bool = False, **kwargs: Any) -> None:
        if getattr(self, "_closed", True):
            return
        self._closed = self.closed = True
        for conn, proc in zip(self._conns, self._procs):
            if not terminate and proc.is_alive():
                try:
                    conn.send(("close", None))
                    conn.recv()
                except (EOFError, BrokenPipeError, OSError):
                    pass
            if terminate:          # a failed env does not wait on workers that may be stuck
                proc.terminate()
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=5)
            conn.close()
