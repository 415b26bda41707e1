"""pytest suite of braid.serve (issue 43) over the C API (braid._braid).

    PYTHONPATH=python BRAID_BUILD_DIR=build python3 -m pytest -q python/tests/test_serve.py

braid.serve must give each request the ids braid.generate gives the same
prompt at the same index with the same options (greedy and seeded sampling),
whatever it was batched with, however its prompt was chunked and whether it
was preempted; verify=True proves it in the run.
"""

import math
import os

import pytest

import braid

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
LLAMA = os.path.join(ROOT, "examples", "llama-tiny.mlir")
VOCAB = 256  # llama-tiny's; its context (sequence length) is 16, its batch 2

# Prompts of 6, 6, 2 and 9 tokens; the first two share their first 4.
PROMPTS = [[17, 200, 3, 45, 99, 12], [17, 200, 3, 45, 7, 7], [53, 58],
           [97, 93, 23, 84, 62, 64, 33, 83, 27]]
# Pages of 4 positions and chunks of 4 tokens: prompts are prefilled in
# several chunks beside decoding rows, and the shared head shares a page.
PAGED = dict(page_size=4, prefill_chunk=4)


def requests(prompts, **fields):
    return [dict(prompt=p, **fields) for p in prompts]


def test_greedy_ids_are_generates():
    out = braid.serve(LLAMA, requests(PROMPTS), max_new_tokens=5, **PAGED)
    assert len(out) == 4 and [o.index for o in out] == [0, 1, 2, 3]
    assert out.ids == braid.generate(LLAMA, PROMPTS, max_new_tokens=5)
    assert all(o.finish == "length" and len(o.ids) == 5 for o in out)


def test_seeded_sampling_ids_are_generates():
    sampling = dict(temperature=0.9, top_k=40, top_p=0.95)
    out = braid.serve(LLAMA, requests(PROMPTS), max_new_tokens=5, seed=7, **sampling, **PAGED)
    expected = braid.generate(LLAMA, PROMPTS, max_new_tokens=5, seed=7, **sampling)
    assert out.ids == expected
    # A request's own fields override the call's: request 1 samples, the
    # others are greedy; each equals generate's with its options (and the
    # same seed: it also initializes the parameters).
    mixed = [{"prompt": PROMPTS[0]},
             {"prompt": PROMPTS[1], "temperature": 0.9, "top_k": 40, "top_p": 0.95},
             {"prompt": PROMPTS[2], "max_new_tokens": 3}]
    got = braid.serve(LLAMA, mixed, max_new_tokens=5, seed=7, **PAGED).ids
    greedy = braid.generate(LLAMA, PROMPTS[:3], max_new_tokens=5, seed=7)
    assert got == [greedy[0], expected[1], greedy[2][:3]]
    # Reproducible, and another seed draws other tokens.
    again = braid.serve(LLAMA, requests(PROMPTS), max_new_tokens=5, seed=7, **sampling)
    assert again.ids == expected
    other = braid.serve(LLAMA, requests(PROMPTS), max_new_tokens=5, seed=8, **sampling)
    assert other.ids != expected


def test_verify_passes_with_preemption_and_shared_pages():
    # Two decode rows and a pool of 4 pages of 4 positions: two sequences of
    # up to 14 positions (4 pages each, 3 when sharing one) cannot run
    # together, so the newer is preempted and recomputed; prompts 0 and 1
    # share their first page.
    out = braid.serve(LLAMA, requests(PROMPTS), max_new_tokens=5, batch=2, kv_pages=4,
                      verify=True, **PAGED)
    assert out.verified is True
    assert "verify: serving against each request alone on 1 rank: ok" in out.stdout
    assert out.stats.preemptions > 0 and out.stats.shared_pages > 0
    assert out.stats.pages == 4 and out.stats.pages_peak <= 4
    assert out.ids == braid.generate(LLAMA, PROMPTS, max_new_tokens=5)


def test_failed_verify_raises_verify_error(monkeypatch):
    # The runtime's test hook starts every prompt chunk after a sequence's
    # first one position early (prompt 3 takes 3 chunks of 4): --verify must
    # see other logits.
    monkeypatch.setenv("BRAID_TEST_SERVE_FAULT", "chunk")
    with pytest.raises(braid.VerifyError, match=r"verify: FAIL serving against each request "
                       r"alone on 1 rank: request 3 step \d+: logit difference") as info:
        braid.serve(LLAMA, requests(PROMPTS), max_new_tokens=4, verify=True, **PAGED)
    assert info.value.result.verified is False


def test_result_fields_and_summary():
    out = braid.serve(LLAMA, requests(PROMPTS[:2]) + [{"prompt_len": 5, "arrival_ms": 20}],
                      max_new_tokens=4, **PAGED)
    assert isinstance(out, braid.ServeResult) and len(list(out)) == 3
    for i, o in enumerate(out):
        assert isinstance(o, braid.RequestOutput) and o.index == i
        assert len(o.ids) == 4 and all(0 <= t < VOCAB for t in o.ids)
        assert o.finish == "length"
        assert o.ttft_ms >= 0 and o.tpot_ms >= 0
    s = out.stats
    assert isinstance(s, braid.ServeStats)
    assert (s.requests, s.refused) == (3, 0)
    assert s.requests_per_s > 0 and s.tokens_per_s > 0
    assert len(s.ttft_ms) == 3 and s.ttft_ms[0] <= s.ttft_ms[1] <= s.ttft_ms[2]
    assert len(s.tpot_ms) == 3 and all(math.isfinite(t) for t in s.tpot_ms)
    assert 0 < s.pages_peak <= s.pages and s.iterations > 0
    # A request arriving at 20 ms is served after it arrives: the run lasts
    # at least that long.
    assert s.requests_per_s < 3 / 0.020
    assert out.verified is None and "serve: 3 requests" in out.stdout


def test_end_token_ends_a_request():
    free = braid.serve(LLAMA, requests(PROMPTS[:2]), max_new_tokens=5).ids
    end = free[1][2]
    out = braid.serve(LLAMA, requests(PROMPTS[:2]), max_new_tokens=5, end_token=end)
    cut = free[1].index(end) + 1
    assert out[1].ids == free[1][:cut] and out[1].finish == "end_token"
    if end not in free[0]:
        assert out[0].ids == free[0] and out[0].finish == "length"


def test_requests_file(tmp_path):
    # A path serves its JSON lines; blank lines are skipped, a bad line is
    # that request's refusal.
    path = tmp_path / "requests.jsonl"
    path.write_text('{"prompt": [17, 200, 3]}\n\n{"prompt": [53, 58], "max_new_tokens": 2}\n')
    out = braid.serve(LLAMA, path, max_new_tokens=3)
    assert out.ids == [braid.generate(LLAMA, [[17, 200, 3]], max_new_tokens=3)[0],
                       braid.generate(LLAMA, [[53, 58]], max_new_tokens=2)[0]]
    path.write_text('{"prompt": [1, 2]}\n{"prompt": [3], "colour": 1}\n')
    with pytest.raises(braid.GenerateError, match=r'request 1: unknown field "colour"'):
        braid.serve(LLAMA, str(path), max_new_tokens=3)


def test_refused_requests_raise_naming_them():
    reqs = [{"prompt": [4, 8, 15]}, {"prompt": [16, VOCAB]}, {"prompt": []},
            {"prompt_len": 40}, {"prompt": [23, 42]}]
    with pytest.raises(braid.GenerateError) as info:
        braid.serve(LLAMA, reqs, max_new_tokens=3)
    e = info.value
    assert isinstance(e, ValueError) and isinstance(e, braid.BraidError)
    assert sorted(e.refused) == [1, 2, 3]
    assert "outside the vocabulary" in e.refused[1]
    assert "empty prompt" in e.refused[2]
    assert "longer than the context of 16" in e.refused[3]
    assert "request 1: token id 256" in str(e)
    # The others were served, with the ids they get alone.
    assert e.ids == [o.ids if o else None for o in e.result]
    assert e.ids[1] is None and e.result[3] is None
    assert e.ids[0] == braid.generate(LLAMA, [[4, 8, 15]], max_new_tokens=3)[0]
    assert e.ids[4] == braid.generate(LLAMA, [[23, 42]], max_new_tokens=3)[0]
    assert e.result.stats.refused == 3


def test_bad_arguments_raise_before_compiling():
    # Not a model at all: every argument error below comes before it is read.
    bad_model = "this is not MLIR"
    ok = [{"prompt": [1, 2]}]
    with pytest.raises(ValueError, match=r"request 1: unknown field 'colour'"):
        braid.serve(bad_model, ok + [{"prompt": [3], "colour": 1}])
    with pytest.raises(ValueError, match=r"request 0: give one of 'prompt'"):
        braid.serve(bad_model, [{"prompt": [1], "prompt_len": 3}])
    with pytest.raises(ValueError, match=r"request 0: give one of 'prompt'"):
        braid.serve(bad_model, [{"max_new_tokens": 3}])
    with pytest.raises(TypeError, match=r"request 0: prompt must be a list of token ids"):
        braid.serve(bad_model, [{"prompt": "hello"}])
    with pytest.raises(TypeError, match=r"request 0: prompt\[1\] must be an integer"):
        braid.serve(bad_model, [{"prompt": [1, 2.5]}])
    with pytest.raises(ValueError, match=r"request 0: prompt\[0\] must be >= 0"):
        braid.serve(bad_model, [{"prompt": [-1]}])
    with pytest.raises(ValueError, match=r"request 0: top_p must be a finite number in \(0, 1\]"):
        braid.serve(bad_model, [{"prompt": [1], "top_p": 0}])
    with pytest.raises(TypeError, match=r"request 0: max_new_tokens must be an integer"):
        braid.serve(bad_model, [{"prompt": [1], "max_new_tokens": True}])
    with pytest.raises(TypeError, match=r"request 0 must be a dict"):
        braid.serve(bad_model, [[1, 2]])
    with pytest.raises(ValueError, match=r"page_size must be >= 1, found -4"):
        braid.serve(bad_model, ok, page_size=-4)
    with pytest.raises(ValueError, match=r"kv_pages must be >= 1, found 0"):
        braid.serve(bad_model, ok, kv_pages=0)
    with pytest.raises(ValueError, match=r"max_new_tokens must be >= 1"):
        braid.serve(bad_model, ok, max_new_tokens=0)
    with pytest.raises(ValueError, match=r"temperature must be a finite number >= 0"):
        braid.serve(bad_model, ok, temperature=float("nan"))
    with pytest.raises(TypeError, match=r"requests must be a list of dicts"):
        braid.serve(bad_model, {"prompt": [1]})
    with pytest.raises(FileNotFoundError, match=r"no requests file"):
        braid.serve(bad_model, "/nonexistent/requests.jsonl")
    empty = braid.serve(bad_model, [])
    assert len(empty) == 0 and empty.stats is None
    # And a model that is not one: neither a preset nor a path.
    with pytest.raises(braid.ArgumentError, match="unknown model 'this is not MLIR'"):
        braid.serve(bad_model, ok)
    # Every one of these is also a BraidError.
    with pytest.raises(braid.BraidError, match=r"no requests file"):
        braid.serve(bad_model, "/nonexistent/requests.jsonl")
    with pytest.raises(braid.BraidError, match=r"request 0: prompt must be a list"):
        braid.serve(bad_model, [{"prompt": "hello"}])


def test_compiler_and_driver_errors_raise_braid_error():
    # A bad pipeline option, and a grid the driver refuses: BraidError with
    # their messages (not GenerateError: no request was refused).
    with pytest.raises(braid.BraidError, match=r"dtype"):
        braid.serve(LLAMA, requests(PROMPTS[:2]), max_new_tokens=2, dtype="f13")
    with pytest.raises(braid.BraidError, match=r"dp=0") as info:
        braid.serve(LLAMA, requests(PROMPTS[:2]), max_new_tokens=2, grid="dp=0")
    assert not isinstance(info.value, braid.GenerateError)


def test_grids_serve_what_one_rank_serves():
    # tp=2 (one pool split over kv heads) and dp=2 (two replicas, each with
    # its own pool and scheduler) on two CPU ranks serve one rank's ids.
    alone = braid.serve(LLAMA, requests(PROMPTS), max_new_tokens=3, **PAGED)
    tp = braid.serve(LLAMA, requests(PROMPTS), max_new_tokens=3, grid="tp=2", **PAGED)
    assert tp.ids == alone.ids and tp.stats.replicas == 1
    dp = braid.serve(LLAMA, requests(PROMPTS), max_new_tokens=3, grid={"dp": 2}, **PAGED)
    assert dp.ids == alone.ids
    assert dp.stats.replicas == 2 and dp.stats.requests == 4


def test_static_batching_serves_the_same_ids_in_more_iterations():
    # Waves of 2 that start when the last has ended: bench/serving's baseline.
    continuous = braid.serve(LLAMA, requests(PROMPTS), max_new_tokens=5, **PAGED)
    waves = braid.serve(LLAMA, requests(PROMPTS), max_new_tokens=5, static_batching=True,
                        **PAGED)
    assert waves.ids == continuous.ids
    assert waves.stats.iterations > continuous.stats.iterations


def test_token_budget_serves_generates_ids_in_mixed_calls():
    # Decode rows and prompt chunks in one call of 8 token rows (batch 2):
    # the ids generate gives, verified in the run, preempted in a small pool.
    out = braid.serve(LLAMA, requests(PROMPTS), max_new_tokens=5, batch=2, kv_pages=4,
                      token_budget=8, verify=True, **PAGED)
    assert out.verified is True and out.stats.preemptions > 0
    assert out.ids == braid.generate(LLAMA, PROMPTS, max_new_tokens=5)
    with pytest.raises(ValueError, match=r"token_budget must be >= 0, found -1"):
        braid.serve(LLAMA, requests(PROMPTS), token_budget=-1)
    # 0: prefill and decode calls apart (the default runs mixed calls).
    apart = braid.serve(LLAMA, requests(PROMPTS), max_new_tokens=5, token_budget=0, **PAGED)
    assert apart.ids == out.ids
    with pytest.raises(braid.BraidError, match=r"--token-budget 2 must exceed --batch 2"):
        braid.serve(LLAMA, requests(PROMPTS), batch=2, token_budget=2)
