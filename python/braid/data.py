"""Tokenized datasets for `braid-run --data` (runtime/src/data.h reads them).

    python3 -m braid.data tokenize --tokenizer DIR TEXT... -o OUT.bin

encodes each TEXT file with the Hugging Face tokenizer in DIR (its
tokenizer.json, or that file itself; the `tokenizers` package from PyPI),
appends the end-of-text id after each file (the tokenizer's eos_token from
DIR/tokenizer_config.json, or --eos ID; --no-eos: none), and writes the ids
as one flat stream: a headerless .bin of uint16 ids (nanoGPT's format;
uint32 when the vocabulary needs it or with --dtype uint32) or a 1-d .npy.
It prints the file, the id count and the dtype; braid-run needs a
--data-dtype uint32 for a uint32 .bin.

    python3 -m braid.data encode --tokenizer DIR TEXT...
    python3 -m braid.data decode --tokenizer DIR [FILE...]

are text in and out of `braid-run --generate` (its --prompt-text): encode
prints one line of ids per TEXT (the --prompts format), with the special
tokens of the tokenizer's post-processor as Hugging Face adds them for
generation; decode copies a generation's output and adds after each
"request N: ids" line a "request N text: ..." line, the ids decoded without
special tokens as a JSON string.
"""
import argparse
import json
import os
import re
import sys

import numpy as np

from . import text as text_io


def load_tokenizer(path):
    """The tokenizers.Tokenizer of DIR/tokenizer.json (or of that file)."""
    from .errors import BraidError
    from .text import load_tokenizer as load
    try:
        return load(path)
    except BraidError as e:
        raise SystemExit(f"braid.data: {e}") from None


def eos_id(tokenizer, path):
    """The id of the eos_token of DIR/tokenizer_config.json, or None."""
    config = os.path.join(path if os.path.isdir(path) else os.path.dirname(path),
                          "tokenizer_config.json")
    if not os.path.isfile(config):
        return None
    token = json.load(open(config, encoding="utf-8")).get("eos_token")
    if isinstance(token, dict):  # {"content": "</s>", ...}
        token = token.get("content")
    return tokenizer.token_to_id(token) if isinstance(token, str) else None


def tokenize(tokenizer_path, texts, out, dtype=None, eos=None, add_eos=True):
    """Writes the ids of the `texts` files to `out` (.bin or .npy); returns
    (count, dtype name)."""
    if not out.endswith((".bin", ".npy")):
        raise SystemExit(f"braid.data: {out}: the output is a .bin or a .npy")
    tokenizer = load_tokenizer(tokenizer_path)
    vocab = tokenizer.get_vocab_size(with_added_tokens=True)
    if add_eos and eos is None:
        eos = eos_id(tokenizer, tokenizer_path)
    if dtype is None:
        dtype = "uint16" if vocab <= 1 << 16 else "uint32"
    if dtype == "uint16" and vocab > 1 << 16:
        raise SystemExit(f"braid.data: a vocabulary of {vocab} ids does not fit uint16")
    parts = []
    for text in texts:
        with open(text, encoding="utf-8") as f:
            ids = tokenizer.encode(f.read(), add_special_tokens=False).ids
        if add_eos and eos is not None:
            ids.append(eos)
        parts.append(np.asarray(ids, dtype=np.int64))
    ids = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    array = ids.astype(dtype)
    if out.endswith(".npy"):
        np.save(out, array)
    else:
        array.tofile(out)
    return len(array), dtype


_REQUEST = re.compile(r"^request (\d+): ([\d ]*)$")


def encode(tokenizer_path, texts, out):
    """Writes one line of ids per text (the --prompts format of braid-run
    --generate), special tokens added as for generation."""
    tokenizer = load_tokenizer(tokenizer_path)
    for i, text in enumerate(texts):
        out.write(" ".join(map(str, text_io.encode_one(tokenizer, text, i))) + "\n")


def decode(tokenizer_path, lines, out):
    """Copies a generation's output, each "request N: ids" line followed by
    "request N text: ..." (the ids decoded without special tokens, as a JSON
    string)."""
    tokenizer = load_tokenizer(tokenizer_path)
    for line in lines:
        out.write(line)
        m = _REQUEST.match(line.rstrip("\n"))
        if m:
            ids = [int(t) for t in m.group(2).split()]
            text = json.dumps(text_io.decode(tokenizer, ids), ensure_ascii=False)
            out.write(f"request {m.group(1)} text: {text}\n")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m braid.data",
                                     description="Tokenized datasets for braid-run --data.")
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("tokenize", help="encode text files into a flat stream of token ids")
    t.add_argument("texts", nargs="+", metavar="TEXT", help="UTF-8 text files, one document each")
    t.add_argument("--tokenizer", required=True, metavar="DIR",
                   help="a directory with tokenizer.json (a Hugging Face model's), or the file")
    t.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="OUT.bin (headerless ids) or OUT.npy")
    t.add_argument("--dtype", choices=["uint16", "uint32"],
                   help="the ids' type (default: uint16 when the vocabulary fits)")
    t.add_argument("--eos", type=int, metavar="ID",
                   help="the id after each file (default: the tokenizer's eos_token)")
    t.add_argument("--no-eos", action="store_true", help="no id between the files")
    e = sub.add_parser("encode", help="prompts as text -> a --prompts file (ids per line)")
    e.add_argument("texts", nargs="+", metavar="TEXT", help="prompts, one per argument")
    d = sub.add_parser("decode", help="a --generate output with each request's text added")
    d.add_argument("inputs", nargs="*", metavar="FILE", help="default: stdin")
    for p in (e, d):
        p.add_argument("--tokenizer", required=True, metavar="DIR",
                       help="a directory with tokenizer.json, or the file")
    args = parser.parse_args(argv)
    if args.command == "encode":
        encode(args.tokenizer, args.texts, sys.stdout)
        return 0
    if args.command == "decode":
        files = [open(f, encoding="utf-8") for f in args.inputs] or [sys.stdin]
        for f in files:
            decode(args.tokenizer, f, sys.stdout)
        return 0
    count, dtype = tokenize(args.tokenizer, args.texts, args.output, args.dtype, args.eos,
                            not args.no_eos)
    hint = " (braid-run --data-dtype uint32)" if dtype == "uint32" and args.output.endswith(
        ".bin") else ""
    print(f"{args.output}: {count} ids, {dtype}{hint}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
