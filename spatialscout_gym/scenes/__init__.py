"""Scene sources (DESIGN.md "scenes" layer): the procedural generator and the frozen catalog.

* :mod:`.procedural`: ``procedural_scene(seed, n_targets=40, layout=None)``, training scenes.
* :mod:`.catalog`: the 80-scene catalog (``catalog_scene_ids``, ``load_scene``, ``scene_by_name``,
  ``CATALOG_VERSION``, ``RENDER_SETTINGS``).
* :mod:`.categories`, :mod:`.furniture`, :mod:`.rooms`, :mod:`.layout`: the category table, object
  builders, room shells and placement; :mod:`.stats` the catalog statistics; :mod:`.export` the
  scene spec files.

Nothing is imported here, so ``import spatialscout_gym`` stays light.
"""
