"""The inventory an agent reads must not reveal where targets are (docs/protocol.md section 1).

Targets are *selected* nearest-first (docs/protocol.md section 8); listing them in that order would hand an
agent each target's distance rank and pin the last one at exactly r."""

from __future__ import annotations

import numpy as np

from spatialscout_gym.core.spec import natural_key
from spatialscout_gym.scenes.catalog import catalog_scene_ids, load_scene


def test_natural_key_orders_numbers_by_value():
    ids = ["Mug_10", "Mug_2", "Chair_1", "Apple_3", "Mug_1"]
    assert sorted(ids, key=natural_key) == ["Apple_3", "Chair_1", "Mug_1", "Mug_2", "Mug_10"]


def test_catalog_inventories_are_sorted_by_id_not_by_distance():
    last_at_radius, rank_corr = 0, []
    for sid in catalog_scene_ids()[::4]:
        spec = load_scene(sid)
        ids = [e.id for e in spec.public.inventory]
        assert ids == sorted(ids, key=natural_key), sid
        dist = np.array([np.linalg.norm(t.center_task) for t in spec.targets])
        last_at_radius += bool(np.isclose(dist[-1], spec.public.radius_m))
        rank_corr.append(np.corrcoef(np.arange(len(dist)), np.argsort(np.argsort(dist)))[0, 1])
    # nearest-first listing would give a rank correlation of 1 and the last target at r every time
    assert abs(float(np.mean(rank_corr))) < 0.3
    assert last_at_radius <= 3
