"""Procedural textures: deterministic per parameters, distinct per kind and seed."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from spatialscout_gym.render import textures
from spatialscout_gym.render.meshes import box_mesh, cylinder_mesh, flat_mesh
from spatialscout_gym.render.textures import TEXTURE_KINDS, texture_image


@pytest.mark.parametrize("kind", sorted(TEXTURE_KINDS))
def test_every_kind_is_an_rgba_uint8_image_with_structure(kind):
    img = texture_image({"kind": kind, "seed": 1})
    assert img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 4
    assert 64 <= img.shape[0] <= 256 and img.shape[0] == img.shape[1]
    assert (img[..., 3] == 255).all()
    assert img[..., :3].std() > 1.0, f"{kind} texture is flat"


def test_different_kinds_give_different_images():
    imgs = {k: texture_image({"kind": k, "seed": 0}) for k in TEXTURE_KINDS}
    kinds = sorted(imgs)
    for i, a in enumerate(kinds):
        for b in kinds[i + 1:]:
            A, B = imgs[a], imgs[b]
            if A.shape == B.shape:
                assert not np.array_equal(A, B), f"{a} and {b} give the same image"


@settings(max_examples=25, deadline=None)
@given(kind=st.sampled_from(sorted(TEXTURE_KINDS)), seed=st.integers(0, 10_000))
def test_same_params_same_image_even_after_cache_clear(kind, seed):
    params = {"kind": kind, "seed": seed, "color": [0.3, 0.5, 0.7]}
    a = texture_image(params).copy()
    textures.clear_caches()
    b = texture_image(dict(reversed(list(params.items()))))  # key order must not matter
    assert np.array_equal(a, b)


def test_seeds_and_colors_change_the_image():
    base = texture_image({"kind": "painting", "seed": 1})
    assert any(not np.array_equal(base, texture_image({"kind": "painting", "seed": s})) for s in (2, 3, 4))
    red = texture_image({"kind": "fabric", "color": [0.9, 0.1, 0.1]})
    blue = texture_image({"kind": "fabric", "color": [0.1, 0.1, 0.9]})
    assert red[..., 0].mean() > blue[..., 0].mean() and blue[..., 2].mean() > red[..., 2].mean()


def test_unknown_kind_names_the_valid_ones():
    with pytest.raises(ValueError, match="wood"):
        texture_image({"kind": "plaid"})


@pytest.mark.parametrize("make", [lambda: box_mesh(np.array([0.3, 0.2, 0.1]), 0.5),
                                  lambda: cylinder_mesh(0.1, 0.2, None),
                                  lambda: flat_mesh(np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1.0]]),
                                                    np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]]), 0.3)])
def test_meshes_wind_counter_clockwise_outward(make):
    v, t, n, uv = make()
    assert v.shape[1] == 3 and uv.shape == (len(v), 2) and n.shape == v.shape
    a, b, c = v[t[:, 0]], v[t[:, 1]], v[t[:, 2]]
    g = np.cross(b - a, c - a)
    centroid = v.mean(axis=0)
    outward = (a + b + c) / 3 - centroid
    assert (np.einsum("ij,ij->i", g, outward) > 0).all()


def test_box_mesh_uvs_scale_with_face_size():
    v, t, n, uv = box_mesh(np.array([1.0, 0.25, 0.5]), tile_m=0.5)
    front = np.all(np.isclose(n, [1, 0, 0]), axis=1)  # +x face spans y (0.5 m) by z (1 m)
    assert np.isclose(np.ptp(uv[front, 0]), 1.0) and np.isclose(np.ptp(uv[front, 1]), 2.0)


@pytest.mark.parametrize("kind", sorted(TEXTURE_KINDS))
def test_library_image_is_the_exact_picture_of_its_entry(kind, tmp_path, monkeypatch):
    """The library solves rgb = c1 A + c2 B + C once per pattern; the result matches the exact
    generator for the same (variant, quantised colours) within one level of 255."""
    monkeypatch.setenv("SPATIALSCOUT_CACHE_DIR", str(tmp_path))
    textures.clear_caches()
    tex = {"kind": kind, "seed": 5 + textures.LIBRARY_VARIANTS, "color": [0.61, 0.2, 0.33],
           "color2": [0.1, 0.7, 0.45]}
    entry = textures.library_texture(tex)
    exact = texture_image({"kind": kind, "seed": entry["variant"], "color": entry["color"],
                           "color2": entry["color2"]}, library=False).astype(int)
    lib = texture_image(tex).astype(int)
    assert np.abs(lib - exact).max() <= 1
    # saved on disk and read back by a fresh process state: the same image
    assert (tmp_path / f"textures-v{textures.TEXTURE_LIBRARY_VERSION}" / f"{kind}_05.npz").exists()
    textures.clear_caches()
    assert np.array_equal(texture_image(tex), lib)


def test_library_is_finite_and_host_memory_bounded(tmp_path, monkeypatch):
    monkeypatch.setenv("SPATIALSCOUT_CACHE_DIR", str(tmp_path))
    textures.clear_caches()
    rng = np.random.default_rng(0)
    for _ in range(400):
        texture_image({"kind": str(rng.choice(["noise", "carpet", "fabric"])), "seed": int(rng.integers(10**6)),
                       "color": rng.random(3).tolist(), "color2": rng.random(3).tolist()})
    stats = textures.cache_stats()
    assert stats["library_fields"] <= 3 * textures.LIBRARY_VARIANTS
    assert stats["image_bytes"] <= textures.IMAGE_CACHE_BYTES
    assert stats["images"] < 400  # older images were evicted
