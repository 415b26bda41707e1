"""pytest suite of the API's arguments (issue 47): what a model argument may be,
the options as keyword arguments with their types and defaults, and every
failure a BraidError.

    PYTHONPATH=python BRAID_BUILD_DIR=build python3 -m pytest -q python/tests/test_arguments.py
"""

import inspect
import pathlib
import pydoc

import pytest

import braid
from braid.options import PIPELINE_OPTIONS

ROOT = pathlib.Path(__file__).resolve().parents[2]
LLAMA = ROOT / "examples" / "llama-tiny.mlir"

# Every public function of the API that compiles a model, with the arguments
# that come before the options.
PIPELINE_FUNCTIONS = [
    ("compile", lambda model, **kw: braid.compile(model, emit_cpp=False, **kw)),
    ("run", lambda model, **kw: braid.run(model, **kw)),
    ("generate", lambda model, **kw: braid.generate(model, [[1, 2]], max_new_tokens=1, **kw)),
    ("serve", lambda model, **kw: braid.serve(model, [{"prompt": [1, 2]}], max_new_tokens=1,
                                              **kw)),
    ("visualize_sharding", lambda model, **kw: braid.visualize_sharding(model, file=False,
                                                                        **kw)),
]


# --- what a model is ------------------------------------------------------

def test_a_path_is_read_as_a_file(tmp_path):
    text = LLAMA.read_text()
    (tmp_path / "model.mlir").write_text(text)
    (tmp_path / "model.txt").write_text(text)
    want = braid.compile("llama-tiny", emit_cpp=False).plan
    assert braid.compile(tmp_path / "model.txt", emit_cpp=False).plan == want
    assert braid.compile(str(tmp_path / "model.mlir"), emit_cpp=False).plan == want
    assert braid.compile(braid.Module.parse(text), emit_cpp=False).plan == want


@pytest.mark.parametrize("name", ["compile", "run", "generate", "serve", "visualize_sharding"])
def test_a_misspelt_preset_suggests_the_closest(name):
    call = dict(PIPELINE_FUNCTIONS)[name]
    with pytest.raises(braid.ArgumentError) as e:
        call("llama_tiny")
    message = str(e.value)
    # It says what it tried: a preset (with the closest names), a path, and
    # where MLIR text goes.
    assert "unknown model 'llama_tiny': not a preset; did you mean 'llama-tiny'" in message
    assert "not a path (a pathlib.Path or a string ending in '.mlir')" in message
    assert "braid.Module.parse(text)" in message


def test_a_missing_file_is_named():
    with pytest.raises(braid.PathNotFoundError) as e:
        braid.compile("missing.mlir")
    assert str(e.value).startswith("model file 'missing.mlir' does not exist")
    assert isinstance(e.value, braid.BraidError) and isinstance(e.value, FileNotFoundError)
    assert e.value.filename == "missing.mlir"
    with pytest.raises(braid.PathNotFoundError, match="model file '/no/such/model.txt'"):
        braid.run(pathlib.Path("/no/such/model.txt"))


def test_mlir_text_is_taken_only_explicitly(tmp_path, monkeypatch):
    text = LLAMA.read_text()
    with pytest.raises(braid.ArgumentError, match=r"looks like MLIR text, which the API takes "
                                                  r"as braid\.Module\.parse\(text\)"):
        braid.compile(text)
    # A file that exists but does not end in .mlir: say how to read it.
    (tmp_path / "model.txt").write_text(text)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(braid.ArgumentError, match=r"pass pathlib\.Path\('model\.txt'\)"):
        braid.compile("model.txt")
    with pytest.raises(braid.ArgumentTypeError, match="model must be a preset name.*found int"):
        braid.compile(42)


def test_module_parse_checks_the_text_and_names_it():
    with pytest.raises(braid.BraidError, match=r"^mine\.mlir:1:\d+: error: "):
        braid.Module.parse("module { func.func @f( }", name="mine.mlir")
    parsed = braid.Module.parse(LLAMA.read_text(), name="mine.mlir")
    assert parsed.render() == LLAMA.read_text() and parsed.source_name == "mine.mlir"
    with pytest.raises(braid.BraidError, match="cannot be extended"):
        parsed.param("w", None, None)
    with pytest.raises(braid.ArgumentTypeError, match="takes MLIR text"):
        braid.Module.parse(b"module {}")


# --- options: signatures, unknown names, types and ranges -------------------

@pytest.mark.parametrize("name", ["compile", "run", "generate", "serve", "visualize_sharding"])
def test_signatures_show_the_options_with_types_and_defaults(name):
    function = getattr(braid, name)
    params = inspect.signature(function).parameters
    assert "options" not in params
    for option in PIPELINE_OPTIONS.values():
        p = params[option.name]
        assert p.kind is inspect.Parameter.KEYWORD_ONLY and p.default == option.default
    assert params["microbatches"].annotation is int
    assert params["dtype"].annotation.__args__ == ("f32", "bf16", "f16")
    doc = pydoc.render_doc(function, renderer=pydoc.plaintext)
    assert "microbatches: int = 1" in doc                      # the signature
    assert "dtype: 'f32' | 'bf16' | 'f16' = 'f32'" in doc      # the docstring's list
    assert "Micro-batches per step" in doc


@pytest.mark.parametrize("name,call", PIPELINE_FUNCTIONS)
def test_an_unknown_option_lists_the_valid_ones(name, call):
    with pytest.raises(braid.ArgumentError) as e:
        call("llama-tiny", micro_batches=2)
    message = str(e.value)
    assert message.startswith(f"{name}() has no option 'micro_batches'; "
                              "did you mean 'microbatches'?")
    assert "(its arguments: model, " in message and "dtype, " in message
    assert isinstance(e.value, TypeError)     # as Python's own unknown keyword


def test_unknown_keywords_of_the_pictures():
    with pytest.raises(braid.ArgumentError, match=r"pipeline_schedule_svg\(\) has no option "
                                                  r"'micro_batches'; did you mean "
                                                  r"'microbatches'\?"):
        braid.pipeline_schedule_svg("llama-tiny", micro_batches=2)
    with pytest.raises(braid.ArgumentError, match=r"trace_svg\(\) has no option 'step'; did "
                                                  r"you mean 'steps'\?"):
        braid.trace_svg([], step=[1])


@pytest.mark.parametrize("kwargs,message", [
    (dict(zero=5), "zero must be one of 0, 1, 2, 3, found 5"),
    (dict(zero="1"), "zero must be an integer, found '1'"),
    (dict(dtype="fp8"), "dtype must be one of 'f32', 'bf16', 'f16', found 'fp8'"),
    (dict(schedule="1F1B"), "schedule must be one of 'gpipe', '1f1b', 'interleaved', 'zb-h1', "
                            "found '1F1B'; did you mean '1f1b'"),
    (dict(sequence_parallel=1), "sequence_parallel must be True or False, found 1"),
    (dict(microbatches=0), "microbatches must be >= 1, found 0"),
    (dict(lr=-1e-3), "lr must be a finite number >= 0, found -0.001"),
    (dict(pp_layout="2,2"), "pp_layout must be a list of integers, found '2,2'"),
    (dict(grid=3), "grid must be a string"),
    (dict(grid={"dp": 0}), r"grid\['dp'\] must be >= 1, found 0"),
    (dict(emit_cpp="yes"), "emit_cpp must be True or False, found 'yes'"),
])
def test_a_bad_value_names_the_option_the_value_and_what_is_accepted(kwargs, message):
    kwargs.setdefault("emit_cpp", False)
    with pytest.raises(braid.ArgumentError, match=message):
        braid.compile("llama-tiny", **kwargs)


@pytest.mark.parametrize("call,message", [
    (lambda: braid.run("llama-tiny", steps=0), "steps must be >= 1, found 0"),
    (lambda: braid.run("llama-tiny", verify_tolerance=-1),
     "verify_tolerance must be a finite number >= 0"),
    (lambda: braid.run("llama-tiny", backend="gpu"),
     "backend must be one of 'cpu', 'cuda', 'cudasim', found 'gpu'"),
    (lambda: braid.run("llama-tiny", seed=-2), "seed must be >= 0, found -2"),
    (lambda: braid.generate("llama-tiny", [[1]], temperature=-1),
     "temperature must be a finite number >= 0"),
    (lambda: braid.generate("llama-tiny", [[1]], batch=0), "batch must be >= 1, found 0"),
    (lambda: braid.generate("llama-tiny", "1 2 3"), "prompts must be a list of prompts"),
    (lambda: braid.serve("llama-tiny", [{"prompt": [1]}], verify="no"),
     "verify must be True or False"),
    (lambda: braid.visualize_sharding("llama-tiny", tensors="wq"),
     "tensors must be a list of names, found 'wq'"),
    (lambda: braid.visualize_sharding("llama-tiny", kinds=["params"]),
     r"kinds\[0\] must be one of 'param', 'state', 'boundary', found 'params'; did you "
     r"mean 'param'"),
    (lambda: braid.pipeline_schedule_svg("llama-tiny", pp=0), "pp must be >= 1, found 0"),
    (lambda: braid.compile("llama-tiny", "dp=2", "extra"), r"compile\(\): too many positional"),
])
def test_the_functions_own_arguments_are_checked(call, message):
    with pytest.raises(braid.ArgumentError, match=message):
        call()


# --- the table agrees with the native pipeline ------------------------------

def _native_options():
    """{flag: value} of the native pipeline options' printed form."""
    opts = braid.api._native().PipelineOptions()
    text = str(opts).strip().strip("{}")
    out = {}
    for part in text.split(" "):
        if part:
            key, _, value = part.partition("=")
            out[key] = value
    return out


def test_the_table_has_the_native_options_and_defaults():
    native = _native_options()
    native.pop("grid")           # an argument of its own (grid="dp=2,tp=2")
    ours = {o.flag: o for o in PIPELINE_OPTIONS.values()}
    # MLIR prints a list option only when it holds something.
    for o in PIPELINE_OPTIONS.values():
        if o.type is tuple:
            native.setdefault(o.flag, "")
    assert sorted(ours) == sorted(native)
    for flag, value in native.items():
        option = ours[flag]
        if option.type is float:
            assert float(value) == option.default, flag
        else:
            assert value == option.text(option.default), flag


@pytest.mark.parametrize("option", [o for o in PIPELINE_OPTIONS.values() if o.choices],
                         ids=lambda o: o.name)
def test_every_choice_is_one_the_pipeline_takes(option):
    for value in option.choices:
        ok, err = braid.api._native().PipelineOptions().parse(
            f"{option.flag}={option.text(value)}")
        assert ok, err
    ok, _ = braid.api._native().PipelineOptions().parse(f"{option.flag}=nonsense")
    assert not ok


# --- every failure is a BraidError -----------------------------------------

def test_file_arguments_that_do_not_exist(tmp_path):
    with pytest.raises(braid.PathNotFoundError, match="no trace file"):
        braid.trace_svg(tmp_path / "none.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(braid.BraidError, match="not a readable Perfetto trace"):
        braid.trace_svg(tmp_path / "bad.json")
    with pytest.raises(braid.BraidError, match="cannot write"):
        braid.pipeline_schedule_svg("llama-tiny", path=tmp_path / "no" / "dir" / "s.svg")
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(braid.BraidError, match="cannot prepare"):
        braid.run("llama-tiny", dump=blocker / "out")


def test_builder_errors_are_braid_errors():
    with pytest.raises(braid.ArgumentError, match="unknown preset 'llama_tiny'; did you mean "
                                                  "'llama-tiny'"):
        braid.preset("llama_tiny")
    with pytest.raises(braid.ArgumentError, match="heads"):
        braid.compile(braid.preset("llama-tiny", heads=3), emit_cpp=False)
    assert issubclass(braid.IRError, braid.BraidError)
