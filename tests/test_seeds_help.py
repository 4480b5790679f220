"""``evaluate --help`` says what ``--seeds`` takes: every form it shows is accepted, and it says
that one number alone (other than 0) is refused and what to write instead, the refusal's own
advice."""

from __future__ import annotations

import re

import pytest

from spatialscout_gym.cli.errors import CliError
from spatialscout_gym.cli.evaluate import parse_seeds
from spatialscout_gym.cli.main import build_parser


def _seeds_help() -> str:
    parser = build_parser("evaluate")
    sub = next(a for a in parser._actions if a.dest == "command").choices["evaluate"]
    action = next(a for a in sub._actions if "--seeds" in a.option_strings)
    return " ".join(str(action.help).split())


def test_the_seeds_help_says_what_a_single_number_does():
    text = _seeds_help()
    shown = re.findall(r"--seeds ((?:[0-9]+(?::[0-9]+)? ?)+)", text)
    assert shown, text
    for example in shown:                   # every form the help shows runs
        assert parse_seeds(example.split())
    with pytest.raises(CliError) as refused:
        parse_seeds(["5"])
    # the help says the refusal and both ways out the refusal names
    assert "one number alone" in text and "--repeats N" in text and "--seeds K:K+1" in text, text
    assert "--repeats 5" in str(refused.value) and "--seeds 5:6" in str(refused.value)
