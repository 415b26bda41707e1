"""pytest suite of braid.generate with a tokenizer (issue 46, "Text").

    PYTHONPATH=python BRAID_BUILD_DIR=build python3 -m pytest -q python/tests/test_text.py

A BPE tokenizer is trained here with the `tokenizers` package (a vocabulary of
200 with a BOS added by its post-processor, as Llama's is), so that it fits
llama-tiny's 256 ids. Text is only a wrapper: the ids of a text prompt are
those of braid.generate on the encoded ids, and the text is their decoding.
"""

import json
import os
import subprocess
import sys

import pytest

tokenizers = pytest.importorskip("tokenizers")

import braid  # noqa: E402
from braid.errors import ArgumentError, DependencyError, PathNotFoundError  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
LLAMA = os.path.join(ROOT, "examples", "llama-tiny.mlir")
TEXTS = ["the quick brown fox", "a stitch in time"]


def train(tmp_path, vocab_size=200):
    """A byte-level BPE tokenizer in tmp_path/tok whose post-processor adds <s>
    (its alphabet the corpus's characters only, so that 200 ids bound it)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the quick brown fox jumps over the lazy dog. " * 20 +
                      "a stitch in time saves nine; the early bird gets the worm. " * 20)
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train([str(corpus)], trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=["<unk>", "<s>", "</s>"]))
    bos = tok.token_to_id("<s>")
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[
        ("<s>", bos)])
    directory = tmp_path / "tok"
    directory.mkdir()
    tok.save(str(directory / "tokenizer.json"))
    return str(directory), tok


def test_text_is_a_wrapper_of_ids(tmp_path):
    directory, tok = train(tmp_path)
    outputs = braid.generate(LLAMA, TEXTS, max_new_tokens=5, tokenizer=directory)
    encoded = [tok.encode(t).ids for t in TEXTS]
    assert all(e[0] == tok.token_to_id("<s>") for e in encoded)  # the BOS is added
    assert [o.prompt_ids for o in outputs] == encoded
    assert [o.ids for o in outputs] == braid.generate(LLAMA, encoded, max_new_tokens=5)
    for o in outputs:
        assert isinstance(o, braid.TextOutput) and len(o.ids) == 5
        assert o.text == tok.decode(o.ids, skip_special_tokens=True)
    # tokenizer.json itself, a Tokenizer object, and ids among the texts.
    assert braid.generate(LLAMA, TEXTS, max_new_tokens=5,
                          tokenizer=os.path.join(directory, "tokenizer.json")) == outputs
    mixed = braid.generate(LLAMA, [TEXTS[0], encoded[1]], max_new_tokens=5, tokenizer=tok)
    assert mixed == outputs


def test_sampled_text_is_seeded(tmp_path):
    directory, _ = train(tmp_path)
    sampling = dict(max_new_tokens=6, temperature=0.9, top_k=40, seed=3)
    a = braid.generate(LLAMA, TEXTS, tokenizer=directory, **sampling)
    assert a == braid.generate(LLAMA, TEXTS, tokenizer=directory, **sampling)
    assert [o.ids for o in a] == braid.generate(LLAMA, [o.prompt_ids for o in a], **sampling)


def test_without_a_tokenizer_text_is_refused():
    with pytest.raises(braid.ArgumentTypeError, match="prompt 0 is text.*tokenizer"):
        braid.generate(LLAMA, TEXTS, max_new_tokens=2)


def test_tokenizer_larger_than_the_vocabulary():
    from tokenizers import Tokenizer, models
    words = {"<unk>": 0, **{f"w{i}": i for i in range(1, 300)}}
    tok = Tokenizer(models.WordLevel(words, unk_token="<unk>"))
    with pytest.raises(ArgumentError, match=r"tokenizer's vocabulary \(300 ids\) exceeds "
                                            r"the model's \(256 ids\)"):
        braid.generate(LLAMA, TEXTS, max_new_tokens=2, tokenizer=tok)


def test_id_past_the_vocabulary_names_the_prompt():
    # A word-level vocabulary of two ids whose ids are not contiguous: its
    # size fits, "far" encodes to 300.
    from tokenizers import Tokenizer, models, pre_tokenizers
    tok = Tokenizer(models.WordLevel({"<unk>": 0, "far": 300}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    with pytest.raises(ArgumentError, match=r"prompt 1 \('a far one'\) encodes to token id "
                                            r"300, outside the model's vocabulary of 256"):
        braid.generate(LLAMA, ["near", "a far one"], max_new_tokens=2, tokenizer=tok)


def test_missing_tokenizer_file(tmp_path):
    with pytest.raises(PathNotFoundError, match="no tokenizer.json") as e:
        braid.generate(LLAMA, TEXTS, max_new_tokens=2, tokenizer=str(tmp_path))
    assert e.value.filename == str(tmp_path / "tokenizer.json")
    assert isinstance(e.value, FileNotFoundError)


def test_missing_tokenizers_package(tmp_path, monkeypatch):
    directory, _ = train(tmp_path)
    monkeypatch.setitem(sys.modules, "tokenizers", None)  # import raises ImportError
    with pytest.raises(DependencyError, match="pip install tokenizers"):
        braid.generate(LLAMA, TEXTS, max_new_tokens=2, tokenizer=directory)


def test_refused_prompt_keeps_the_others_text(tmp_path):
    directory, tok = train(tmp_path)
    # 14 ids + 5 new tokens - 1 pass llama-tiny's context of 16.
    with pytest.raises(braid.GenerateError, match="prompt 1") as e:
        braid.generate(LLAMA, [TEXTS[0], [5] * 14], max_new_tokens=5, tokenizer=directory)
    first, refused = e.value.outputs
    assert refused is None and e.value.ids[1] is None
    assert first.ids == e.value.ids[0] and first.text == tok.decode(first.ids)


def test_data_encode_decode(tmp_path):
    directory, tok = train(tmp_path)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    r = subprocess.run([sys.executable, "-m", "braid.data", "encode", "--tokenizer", directory,
                        *TEXTS], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "".join(" ".join(map(str, tok.encode(t).ids)) + "\n" for t in TEXTS)
    ids = tok.encode(TEXTS[1], add_special_tokens=False).ids
    r = subprocess.run([sys.executable, "-m", "braid.data", "decode", "--tokenizer", directory],
                       input=f"request 0: {' '.join(map(str, ids))}\nother line\n",
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"request 0: {' '.join(map(str, ids))}\n" \
                       f"request 0 text: {json.dumps(TEXTS[1])}\nother line\n"
