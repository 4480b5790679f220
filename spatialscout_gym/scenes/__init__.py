"""Scene sources (docs/architecture.md "scenes" layer): the procedural generator and the frozen catalog.

* :mod:`.procedural`: ``procedural_scene(seed, n_targets=40, layout=None)``, training scenes.
* :mod:`.catalog`: the 80-scene catalog, versions 1.0, 2.0, 3.0 and 3.1 (the default) (``catalog_scene_ids``,
  ``load_scene``, ``scene_by_name``, ``render_settings``, ``check_provenance``).
* :mod:`.sizes`: each catalog version's generator rules; v2.0's object sizes from AI2-THOR's assets
  (``data/ai2thor_sizes.json``). :mod:`.visibility`: can every target be seen from inside the radius.
* :mod:`.categories`, :mod:`.furniture`, :mod:`.rooms`, :mod:`.layout`: the category table, object
  builders, room shells and placement; :mod:`.stats` the catalog statistics; :mod:`.export` the
  scene spec files.

Nothing is imported here, so ``import spatialscout_gym`` stays light.
"""
