"""``random-nbv`` is the chance baseline of the learned NBV policies: uniform over NBV-v1's
``Discrete(18)``, the space they are trained in (not NBV-v0's ``Discrete(10)``)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from fakes import FakeRenderer, small_scene
from spatialscout_gym.baselines.base import PrivilegedAccess
from spatialscout_gym.baselines.registry import make_agent
from spatialscout_gym.episode.episode import Episode
from spatialscout_gym.nbv.config import nbv_action_space
from spatialscout_gym.nbv.env import NBV_V1_DEFAULTS


def test_random_nbv_draws_uniformly_from_nbv_v1s_actions():
    agent = make_agent("random-nbv")
    assert nbv_action_space(agent.config) == nbv_action_space(type(agent.config)(motion=NBV_V1_DEFAULTS["motion"]))
    assert agent.n_actions == 18
    rng = np.random.default_rng(0)
    draws = np.array([agent.act(None, None, rng) for _ in range(3600)])
    counts = np.bincount(draws, minlength=18)
    assert len(counts) == 18 and counts.min() > 0
    assert stats.chisquare(counts).pvalue > 1e-3            # uniform over all 18


def test_random_nbv_runs_an_episode_with_heading_motions():
    spec = small_scene(64, 64)
    renderer = FakeRenderer(spec, 64, 64)
    ep = Episode(spec.public, renderer, image_budget=6, tool_call_budget=None)
    make_agent("random-nbv").run(ep, rng=np.random.default_rng(3), privileged=PrivilegedAccess(spec, renderer))
    assert ep.done and ep.end_reason == "finish_mapping"
    # each heading step sets the pitch to -20 degrees: every capture after frame 0 has it
    pitches = [ep.frames[f].pose.pitch_deg for f in sorted(ep.frames)[1:]]
    assert pitches and all(p == pytest.approx(-20.0) for p in pitches)
