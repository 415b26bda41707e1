"""pytest suite of braid.api and braid.svg over the C API (braid._braid).

Run by `tools/braid-dev test` after lit, or alone:
    PYTHONPATH=python BRAID_BUILD_DIR=build python3 -m pytest -q python/tests
(or, after `pip install ./python`, `python3 -m pytest python/tests`).
The programs braid.run builds are cached by braid-run's cache, so a second run
of the suite takes seconds.
"""

import math
import os
import shutil
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import braid

SVG = "{http://www.w3.org/2000/svg}"


def boxes(svg: str, kind: str = "") -> list:
    root = ET.fromstring(svg)    # also checks that it is well-formed XML
    assert root.tag == SVG + "svg"
    return [r for r in root.iter(SVG + "rect")
            if "box" in r.get("class", "").split() and (not kind or kind in r.get("class"))]


# --- compile --------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_dp2_tp2():
    return braid.compile("llama-tiny", grid="dp=2,tp=2", sequence_parallel=True)


def test_compile_plan_names_the_collectives(tiny_dp2_tp2):
    r = tiny_dp2_tp2
    assert r.plan.startswith("plan: grid dp=2,tp=2 (4 ranks), zero 0")
    # Megatron with sequence parallelism: gathers and reduce-scatters over tp,
    # the gradients' all-reduce over dp.
    assert "collective all_gather over tp" in r.plan
    assert "collective reduce_scatter over tp" in r.plan
    assert "collective all_reduce over dp" in r.plan
    assert r.grid == {"dp": 2, "tp": 2}
    assert "sequence-parallel=true" in r.options
    # The partitioned IR holds the transfers as dist ops, the C++ the program.
    assert "dist." in r.ir and "braid.param" in r.ir
    assert list(r.programs) == ["step"]
    assert "braid_program_get" in r.cpp


def test_compile_accepts_builder_models():
    from braid.families import build_model
    cfg = braid.preset("gpt-tiny", layers=1)
    for model in (cfg, build_model(cfg), braid.Module.parse(build_model(cfg).render())):
        r = braid.compile(model, grid={"dp": 2}, emit_cpp=False)
        assert "collective all_reduce over dp" in r.plan
        assert r.programs == {}


def test_compile_zero3_shards_parameters_over_dp():
    r = braid.compile("llama-tiny", grid="dp=2,tp=2", zero=3, emit_cpp=False)
    wq = r.shardings["layers.0.attn.wq"]
    assert wq.global_shape == (64, 64) and wq.local_shape == (32, 32)
    assert wq.dims == (("dp",), ("tp",))


def test_compile_pipeline_has_a_program_per_stage():
    r = braid.compile("llama-tiny", grid="pp=2", microbatches=2)
    assert r.plan.startswith("plan: grid pp=2 (2 ranks), pipeline of 2 stages")
    assert "stage 0: collective send over pp" in r.plan
    assert list(r.programs) == ["step.pp0", "step.pp1"]
    assert all("braid_program_get" in cpp for cpp in r.programs.values())


# --- errors ---------------------------------------------------------------

@pytest.mark.parametrize("grid", ["dp=2,tp=x", "dp=0", "foo"])
def test_bad_grid_is_a_python_exception(grid):
    with pytest.raises(braid.BraidError) as e:
        braid.compile("llama-tiny", grid=grid)
    assert f"grid axis '{grid.split(',')[-1]}' must be NAME=SIZE" in str(e.value)
    with pytest.raises(braid.BraidError, match=r"bad --grid '" + grid):
        braid.run("llama-tiny", grid=grid)


def test_bad_model_and_option_are_python_exceptions():
    with pytest.raises(braid.BraidError, match=r"model.mlir:1:\d+: error: "):
        braid.Module.parse("module { func.func @f( }")
    with pytest.raises(braid.BraidError, match="has no option 'no_such_option'"):
        braid.compile("llama-tiny", no_such_option=1)
    with pytest.raises(braid.BraidError, match="recompute must be one of 'none', 'selective', "
                                               "'full', found 'some'"):
        braid.compile("llama-tiny", recompute="some")
    with pytest.raises(braid.BraidError, match="zero must be one of 0, 1, 2, 3, found 7"):
        braid.run("llama-tiny", zero=7)


# --- run ------------------------------------------------------------------

@pytest.fixture(scope="module")
def one_rank():
    return braid.run("llama-tiny", steps=2, dump=True)


@pytest.fixture(scope="module")
def dp2(tmp_path_factory):
    trace = tmp_path_factory.mktemp("trace") / "trace.json"
    return braid.run("llama-tiny", grid="dp=2", steps=2, verify=True, trace=trace)


def test_losses_are_finite_and_agree_across_grids(one_rank, dp2):
    assert len(one_rank.losses) == 2 and len(dp2.losses) == 2
    assert all(math.isfinite(x) for x in one_rank.losses + dp2.losses)
    # Loss near ln(256) at initialization, then down.
    assert abs(one_rank.losses[0] - math.log(256)) < 0.5
    assert one_rank.losses[1] < one_rank.losses[0]
    assert dp2.verified is True and "verify: PASS" in dp2.stdout
    for a, b in zip(one_rank.losses, dp2.losses):
        assert abs(a - b) <= 1e-5 * abs(a)


def test_verify_failure_is_a_verify_error():
    # Gradients of dp=2 differ from 1 rank's by rounding (~1e-7): not 0.
    with pytest.raises(braid.VerifyError, match=r"verify: FAIL \(tolerance 0\)") as e:
        braid.run("llama-tiny", grid="dp=2", steps=1, verify=True, verify_tolerance=0)
    assert e.value.result.verified is False and len(e.value.result.losses) == 1


def test_dumps_are_numpy_arrays_of_the_right_shapes(one_rank):
    d = one_rank.dumps
    assert d["tokens"].shape == (2, 16) and d["labels"].shape == (2, 16)
    assert d["logits"].shape == (2, 16, 256) and d["logits"].dtype == np.float32
    assert d["loss"].shape == ()
    assert d["tok_embeddings"].shape == (256, 64)
    assert d["updated.layers.0.attn.wq"].shape == (64, 64)
    assert d["grad.layers.0.mlp.w_down"].shape == (128, 64)
    # The last step's loss, as printed.
    assert float(d["loss"]) == pytest.approx(one_rank.losses[-1], rel=1e-6)


def test_partitioned_dumps_hold_global_activations(one_rank):
    d = braid.run("llama-tiny", grid="dp=2", steps=2, dump=True).dumps
    assert d["tok_embeddings"].shape == one_rank.dumps["tok_embeddings"].shape
    assert d["logits"].shape == one_rank.dumps["logits"].shape
    np.testing.assert_allclose(d["logits"], one_rank.dumps["logits"], rtol=0,
                               atol=1e-5 * float(np.abs(one_rank.dumps["logits"]).max()))


def test_run_into_a_folder_keeps_the_dumps(tmp_path):
    r = braid.run("gpt-tiny", steps=1, dump=tmp_path / "out")
    assert (tmp_path / "out" / "logits.npy").exists()
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "logits.npy"), r.dumps["logits"])


# --- visualize_sharding ---------------------------------------------------

def test_visualize_sharding_table(capsys):
    text = braid.visualize_sharding("llama-tiny", grid="dp=2,tp=2",
                                    tensors=["layers.0.attn.wq", "tok_embeddings"])
    assert capsys.readouterr().out == text
    assert text.split("\n\n")[0] == textwrap.dedent("""\
        param layers.0.attn.wq: 64x64 [-, tp] on dp=2,tp=2
          dim 0:     64 replicated                   -> 64
          dim 1:     64 split over tp(2)             -> 32
          replicated over dp
          rank  coords     shard  slice
          0     dp=0,tp=0  64x32  [0:64, 0:32]
          1     dp=0,tp=1  64x32  [0:64, 32:64]
          2     dp=1,tp=0  64x32  [0:64, 0:32]
          3     dp=1,tp=1  64x32  [0:64, 32:64]""")
    assert "  1     dp=0,tp=1  128x64  [128:256, 0:64]" in text


def test_visualize_sharding_unknown_tensor():
    # A BraidError as the README promises (it was a KeyError), with the closest names.
    with pytest.raises(braid.ArgumentError, match="no tensor 'nope' in the plan of grid 'dp=2'"):
        braid.visualize_sharding("llama-tiny", grid="dp=2", tensors=["nope"], file=False)
    with pytest.raises(braid.BraidError, match=r"did you mean 'layers\.0\.attn\.wq'"):
        braid.visualize_sharding("llama-tiny", grid="dp=2", tensors=["layers.0.attn.wq_"],
                                 file=False)
    with pytest.raises(braid.BraidError, match="lists no tensor shardings"):
        braid.visualize_sharding("llama-tiny", grid="pp=2", file=False)


# --- SVG ------------------------------------------------------------------

@pytest.mark.parametrize("schedule", ["1f1b", "gpipe"])
def test_pipeline_schedule_svg(schedule, tmp_path):
    svg = braid.pipeline_schedule_svg("llama-tiny", pp=2, microbatches=4, schedule=schedule,
                                      path=tmp_path / "s.svg")
    assert (tmp_path / "s.svg").read_text() == svg
    # A forward and a backward per micro-batch on each of the 2 stages.
    assert len(boxes(svg)) == 16
    assert len(boxes(svg, "F")) == 8 and len(boxes(svg, "B")) == 8
    assert ">stage 1<" in svg


def test_pipeline_schedule_svg_zero_bubble():
    svg = braid.pipeline_schedule_svg("llama-tiny", pp=2, microbatches=2, schedule="zb-h1")
    # zb-h1 splits each backward into B and W.
    assert len(boxes(svg)) == 12 and len(boxes(svg, "W")) == 4


def test_trace_svg_has_compute_and_communication_lanes(dp2):
    import json
    assert len(dp2.traces) == 2
    events = [e for f in dp2.traces for e in json.load(open(f))["traceEvents"]
              if e["ph"] == "X"]
    svg = braid.trace_svg(dp2)
    assert len(boxes(svg)) == len(events) > 0
    assert len(boxes(svg, "comm")) == sum(e["cat"] == "comm" for e in events) > 0
    for lane in ("rank 0 compute", "rank 1 compute", "rank 0 comm dp", "rank 1 comm dp"):
        assert f">{lane}<" in svg
    step2 = braid.trace_svg(dp2, steps=[2])
    assert 0 < len(boxes(step2)) < len(events)


# --- without the extension ------------------------------------------------

def test_builder_works_without_the_extension(tmp_path):
    # A copy of the pure-Python package, with no build next to it.
    src = os.path.join(os.path.dirname(braid.__file__))
    shutil.copytree(src, tmp_path / "braid",
                    ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    code = textwrap.dedent("""
        import braid
        assert "braid.model" in braid.build("llama-tiny")
        try:
            braid.compile("llama-tiny")
        except braid.DependencyError as e:
            assert "braid._braid" in str(e) and isinstance(e, ImportError)
            print("ok")
    """)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "BRAID_BUILD_DIR")}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
