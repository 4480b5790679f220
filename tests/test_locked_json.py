"""``core.files.locked_json_object``: the one read-change-write of a JSON object shared by processes
(the spend ledger and the rate-limit window use it): no update is lost between processes, and a
file holding anything but an object is refused and left as it is, never reset."""

from __future__ import annotations

import json
import multiprocessing

import pytest

from spatialscout_gym.core.files import SharedFileError, locked_json_object


def _bump(path: str, times: int) -> None:
    for _ in range(times):
        with locked_json_object(path) as state:
            n = state.get("n", 0)
            for _ in range(2000):   # widen the gap between read and write
                pass
            state["n"] = n + 1


def test_no_update_is_lost_between_processes(tmp_path):
    path = str(tmp_path / "shared" / "counter.json")
    procs = [multiprocessing.get_context("fork").Process(target=_bump, args=(path, 100)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    assert [p.exitcode for p in procs] == [0] * 4
    assert json.loads(open(path).read()) == {"n": 400}


def test_a_file_that_holds_no_object_is_refused_untouched_and_an_unchanged_one_is_not_rewritten(tmp_path):
    path = tmp_path / "state.json"
    for text in ("[1, 2]", "not json", "", '{"a": NaN}'):
        path.write_text(text)
        with pytest.raises(SharedFileError, match=str(path)):
            with locked_json_object(path):
                pass
        assert path.read_text() == text   # never reset: what it held is kept for a person to see
    path.write_text('{"a": 1}')
    before = path.stat().st_mtime_ns
    with locked_json_object(path) as state:
        assert state == {"a": 1}
    assert path.read_text() == '{"a": 1}' and path.stat().st_mtime_ns == before
    fresh = tmp_path / "new.json"
    with locked_json_object(fresh) as state:   # a missing file starts as an empty object
        assert state == {}
    assert fresh.read_text() == "{}"


def test_file_errors_share_one_base_and_travel_to_worker_processes(tmp_path):
    """A shared-file error and a scene-file error are two kinds of one base: each pickles back to
    its own kind with its path and problem (as when a worker process reports it), and catching
    one kind never catches the other."""
    import pickle

    from spatialscout_gym.core.files import FileProblemError, SceneFileError
    for kind in (SharedFileError, SceneFileError):
        e = pickle.loads(pickle.dumps(kind(tmp_path / "f.json", "holds a list, not an object")))
        assert type(e) is kind and isinstance(e, FileProblemError)
        assert (e.path, e.problem, str(e)) == (tmp_path / "f.json", "holds a list, not an object",
                                               f"{tmp_path / 'f.json'}: holds a list, not an object")
    assert not issubclass(SharedFileError, SceneFileError) and not issubclass(SceneFileError, SharedFileError)
