"""pytest suite of braid.generate (issue 42) over the C API (braid._braid).

    PYTHONPATH=python BRAID_BUILD_DIR=build python3 -m pytest -q python/tests/test_generate.py

braid.generate must give the ids `braid-run MODEL --generate N --prompts FILE`
prints (the same programs through the same driver), prompt by prompt in order,
whatever the prompts' lengths and the waves they share.
"""

import os
import re
import shutil
import subprocess

import pytest

import braid

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
LLAMA = os.path.join(ROOT, "examples", "llama-tiny.mlir")
VOCAB = 256  # llama-tiny's; its context (sequence length) is 16, its batch 2


def braid_run_binary():
    build = os.environ.get("BRAID_BUILD_DIR") or os.path.join(ROOT, "build")
    path = os.path.join(build, "bin", "braid-run")
    return path if os.path.exists(path) else shutil.which("braid-run")


def braid_run_ids(tmp_path, prompts, tokens, *flags):
    """What braid-run --generate prints for `prompts`: ids per request."""
    binary = braid_run_binary()
    if not binary:
        pytest.skip("braid-run is not built")
    path = tmp_path / "prompts.txt"
    path.write_text("".join(" ".join(map(str, p)) + "\n" for p in prompts))
    r = subprocess.run([binary, LLAMA, "--quiet", "--generate", str(tokens),
                        "--prompts", str(path), *flags], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    ids, refused = braid.api.parse_requests(r.stdout, len(prompts))
    assert not refused
    return ids


PROMPTS = [[17, 200, 3, 45, 99, 12], [250, 1, 77, 8, 8, 140]]


def test_greedy_ids_are_braid_runs(tmp_path):
    ids = braid.generate(LLAMA, PROMPTS, max_new_tokens=5)
    assert len(ids) == 2 and all(len(i) == 5 for i in ids)
    assert all(0 <= t < VOCAB for i in ids for t in i)
    assert ids == braid_run_ids(tmp_path, PROMPTS, 5)


def test_seeded_sampling_ids_are_braid_runs(tmp_path):
    sampling = dict(temperature=0.9, top_k=40, top_p=0.95)
    ids = braid.generate(LLAMA, PROMPTS, max_new_tokens=5, seed=7, **sampling)
    assert ids == braid_run_ids(tmp_path, PROMPTS, 5, "--seed", "7", "--temperature", "0.9",
                                "--top-k", "40", "--top-p", "0.95")
    # Reproducible, and another seed draws other tokens.
    assert ids == braid.generate(LLAMA, PROMPTS, max_new_tokens=5, seed=7, **sampling)
    assert ids != braid.generate(LLAMA, PROMPTS, max_new_tokens=5, seed=8, **sampling)


def test_prompts_of_different_lengths(tmp_path):
    # Three prompts of 5, 2 and 9 tokens: two waves of the model's batch (2),
    # prefill built for the longest. Each prompt's ids are those it gets alone,
    # and braid-run's for the same file.
    prompts = [[3, 141, 59, 26, 5], [53, 58], [97, 93, 23, 84, 62, 64, 33, 83, 27]]
    ids = braid.generate(LLAMA, prompts, max_new_tokens=4, verify=True)
    assert [len(i) for i in ids] == [4, 4, 4]
    assert ids == braid_run_ids(tmp_path, prompts, 4)
    for prompt, expected in zip(prompts, ids):
        assert braid.generate(LLAMA, [prompt], max_new_tokens=4) == [expected]


def test_refused_prompts_raise_naming_them():
    prompts = [[4, 8, 15], [16, VOCAB], [], [23, 42]]
    with pytest.raises(braid.GenerateError) as info:
        braid.generate(LLAMA, prompts, max_new_tokens=3)
    e = info.value
    assert isinstance(e, ValueError)
    assert sorted(e.refused) == [1, 2]
    assert "outside the vocabulary" in e.refused[1] and "empty prompt" in e.refused[2]
    assert re.search(r"prompt 1: token id 256", str(e))
    # The others ran, with the ids they get alone.
    assert e.ids[1] is None and e.ids[2] is None
    assert e.ids[0] == braid.generate(LLAMA, [prompts[0]], max_new_tokens=3)[0]
    assert e.ids[3] == braid.generate(LLAMA, [prompts[3]], max_new_tokens=3)[0]


def test_prompt_past_the_context_is_refused():
    # 14 + 4 - 1 > 16 rows of the cache.
    with pytest.raises(braid.GenerateError, match=r"exceeds the context of 16"):
        braid.generate(LLAMA, [list(range(1, 15))], max_new_tokens=4)


def test_bad_arguments_raise_before_compiling():
    with pytest.raises(TypeError, match="text"):
        braid.generate(LLAMA, ["hello"], max_new_tokens=2)
    with pytest.raises(TypeError, match="not an integer"):
        braid.generate(LLAMA, [[1.5, 2]], max_new_tokens=2)
    with pytest.raises(ValueError, match="max_new_tokens must be >= 1, found 0"):
        braid.generate(LLAMA, [[1, 2]], max_new_tokens=0)
    # Each is also a BraidError, as every failure of the API.
    with pytest.raises(braid.BraidError, match="text"):
        braid.generate(LLAMA, ["hello"], max_new_tokens=2)
    with pytest.raises(braid.BraidError, match=r"top_p must be a finite number in \(0, 1\]"):
        braid.generate(LLAMA, [[1, 2]], top_p=1.5)
    assert braid.generate(LLAMA, [], max_new_tokens=2) == []


def test_grid_generates_what_one_rank_generates():
    # The grid reaches the driver: tp=2 (a string) and dp=2 (a dict) run on
    # two CPU ranks and generate one rank's ids.
    alone = braid.generate(LLAMA, PROMPTS, max_new_tokens=3)
    assert braid.generate(LLAMA, PROMPTS, max_new_tokens=3, grid="tp=2") == alone
    assert braid.generate(LLAMA, PROMPTS, max_new_tokens=3, grid={"dp": 2}) == alone


def test_bf16_generation_verifies():
    # Pipeline options pass through too: at bf16 the cache and logits are
    # bf16 and teacher forcing holds within the bound derived from rounding.
    prompts = PROMPTS + [[3, 4, 5]]
    ids = braid.generate(LLAMA, prompts, max_new_tokens=5, dtype="bf16", verify=True)
    assert [len(i) for i in ids] == [5, 5, 5]
    assert all(0 <= t < VOCAB for i in ids for t in i)


def test_failed_teacher_forcing_raises_verify_error(monkeypatch):
    # The runtime's test hook corrupts one logit of request 1 at step 2 after
    # sampling: the ids come out, and verify fails naming that step.
    monkeypatch.setenv("BRAID_TEST_PERTURB_LOGITS", "1:2")
    with pytest.raises(braid.VerifyError, match=r"verify: FAIL request 1 step 2"):
        braid.generate(LLAMA, PROMPTS, max_new_tokens=4, verify=True)
