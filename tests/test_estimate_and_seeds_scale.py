"""``evaluate --estimate`` and ``--seeds`` at scale (docs/models.md, "Cost before and during"): the
estimate is a closed form (the same dollars as the per-call sum of its docstring, and a budget of a
trillion calls is answered), the ``--seeds`` duplicate check is linear (the largest seed list
allowed is parsed), and seed counts past the stated bound are refused in one line before any
list is made. The CLI runs as its own process under a time limit that only guards against a hang."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
import threading

import pytest

from spatialscout_gym.cli.errors import CliError
from spatialscout_gym.cli.evaluate import MAX_SEEDS, parse_seeds, repeated
from spatialscout_gym.core.errors import ConfigError
from spatialscout_gym.eval.analysis import cost_estimate as ce

PRICE = {"input_per_mtok": 3.0, "output_per_mtok": 15.0}


def _per_call_sum(calls, prompt_chars, image_tokens, image_budget, rates):
    """The module docstring's sum, one term per call."""
    p = prompt_chars / rates.chars_per_token
    tokens_in = tokens_out = 0.0
    for i in range(1, calls + 1):
        images = min(1 + (i - 1) * rates.images_per_call, image_budget)
        tokens_in += p + (i - 1) * rates.turn_tokens + images * image_tokens
        tokens_out += rates.output_tokens
    return (tokens_in * PRICE["input_per_mtok"] + tokens_out * PRICE["output_per_mtok"]) / 1e6


def test_the_closed_form_is_the_per_call_sum():
    odd = [ce.Rates(4.0, 10, 10, 0.5), ce.Rates(4.0, 10, 10, 3.0)]
    for calls, budget, rates in itertools.product([1, 2, 3, 7, 19, 20, 21, 64], [1, 2, 5, 20, 100],
                                                  [ce.LOW, ce.HIGH, *odd]):
        want = _per_call_sum(calls, 7000, 258, budget, rates)
        got = ce._episode(calls, 7000, 258, budget, rates, PRICE)
        assert got == pytest.approx(want, rel=1e-12), (calls, budget, rates)


def _cli(tmp_path, *argv):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"m": PRICE}))
    return subprocess.run([sys.executable, "-c", "import sys; from spatialscout_gym.cli.main import main; "
                           "raise SystemExit(main(sys.argv[1:]))", "evaluate", "--agent", "openai:m", "--api-key",
                           "x", "--scenes", "procedural:1", "--out", str(tmp_path / "ev"), "--price-table", str(prices),
                           "--estimate", *argv], capture_output=True, text=True, timeout=300)


def test_an_estimate_for_a_trillion_calls_is_answered(tmp_path):
    done = _cli(tmp_path, "--call-budget", "1000000000000")
    assert done.returncode == 0, done.stderr
    high = float(re.search(r"per episode \$[0-9.]+ - \$([0-9.]+)", done.stdout).group(1))
    # the high end grows with the square of the calls: a trillion calls cost far more than 1e20 dollars
    assert high > 1e20
    huge = _cli(tmp_path, "--call-budget", "1" + "0" * 400)
    assert huge.returncode == 2 and len(huge.stderr.strip().splitlines()) == 1 and "Traceback" not in huge.stderr
    with pytest.raises(ConfigError):
        ce.episode_cost_range(model_call_budget=ce.MAX_ESTIMATE_CALLS + 1, image_budget=5, schema_chars=0,
                              image_tokens=1, price=PRICE)


def test_the_duplicate_check_is_linear_and_duplicates_are_still_named():
    box: dict = {}
    many = list(range(2_000_000)) + [7, 1_999_999]
    worker = threading.Thread(target=lambda: box.update(dup=repeated(many)), daemon=True)
    worker.start()
    worker.join(120)   # a guard against a check that visits every pair (4e12 comparisons), not a timing
    assert not worker.is_alive() and box["dup"] == [7, 1_999_999]
    assert parse_seeds([f"0:{MAX_SEEDS}"]) == list(range(MAX_SEEDS))
    with pytest.raises(CliError, match=r"seed\(s\) 3, 4 more than once"):
        parse_seeds(["0:5", "3:6", "9"])


@pytest.mark.parametrize("argv", [["--seeds", "0:1000000000000"], ["--repeats", "1000000000000"],
                                  ["--seeds", "0:60000", "60000:120000"]])
def test_seed_counts_past_the_bound_are_refused_in_one_line(tmp_path, argv):
    done = _cli(tmp_path, *argv)
    err = done.stderr.strip()
    assert done.returncode == 2 and len(err.splitlines()) == 1 and str(MAX_SEEDS) in err, err
    assert not (tmp_path / "ev").exists()


def test_the_printed_estimate_and_the_numbers_are_one_range():
    """``estimate_lines`` prints, and ``estimate_usd`` returns, the episodes times one episode's
    range (the image tokens of the wire format at the delivered size); an agent without a price
    has neither."""
    import types

    from spatialscout_gym.conversation.codecs import CODECS
    from spatialscout_gym.conversation.images import delivered_size
    schema = [{"name": "capture_image", "parameters": {"type": "object"}}]
    provider = types.SimpleNamespace(model="m", api_mode="messages", tool_schema=lambda: schema)
    agent = types.SimpleNamespace(name="anthropic:m", provider=provider, price_table={"m": PRICE}, image_max_side=384)
    w, h = delivered_size(512, 512, 384)
    one = ce.episode_cost_range(model_call_budget=30, image_budget=12, schema_chars=len(json.dumps(schema)),
                                image_tokens=CODECS["messages"].image_tokens(w, h), price=PRICE)
    budgets = dict(episodes=7, model_call_budget=30, image_budget=12, resolution=512)
    usd = ce.estimate_usd(agent, **budgets)
    assert usd == {k: 7 * v for k, v in one.items()} and usd["low"] < usd["all_calls_low"] < usd["high"]
    [line] = ce.estimate_lines(agent, **budgets)
    assert line.startswith(f"anthropic:m: 7 episodes, ${usd['low']:.2f} - ${usd['high']:.2f} "
                           f"(${usd['all_calls_low']:.2f} - ${usd['high']:.2f} if every episode makes all 30 calls)")
    assert f"per episode ${one['low']:.4f} - ${one['high']:.4f}" in line and f"per {w}x{h} image" in line
    unpriced = types.SimpleNamespace(name="anthropic:n", provider=types.SimpleNamespace(model="n"), price_table={})
    assert ce.estimate_usd(unpriced, **budgets) is None
    assert ce.estimate_lines(unpriced, **budgets) == ["anthropic:n: no price (--price-table with an entry for n); "
                                                      "nothing to estimate"]
