"""Text in and out of generation through a Hugging Face tokenizer.

`braid.generate(model, prompts, tokenizer=DIR)` and `python3 -m braid.data
encode/decode` (what `braid-run --prompt-text` calls) share these: the
tokenizer.json is read by the `tokenizers` package (PyPI), prompts are encoded
as Hugging Face encodes them for generation (with the special tokens of the
tokenizer's post-processor, e.g. Llama's BOS) and generated ids are decoded
without the special tokens.
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Optional

from .errors import ArgumentError, ArgumentTypeError, DependencyError, PathNotFoundError


@dataclasses.dataclass
class TextOutput:
    """One prompt's generation with a tokenizer: `text` the decoded new
    tokens (special tokens skipped), `ids` the new token ids, `prompt_ids`
    the ids the prompt was encoded to."""
    text: str
    ids: list
    prompt_ids: list


def load_tokenizer(tokenizer):
    """The tokenizers.Tokenizer of DIR/tokenizer.json, of that file, or
    `tokenizer` itself when it already is one."""
    if not isinstance(tokenizer, (str, os.PathLike)):
        if all(hasattr(tokenizer, a) for a in ("encode", "decode", "get_vocab_size")):
            return tokenizer
        raise ArgumentTypeError("tokenizer must be a directory holding tokenizer.json, the "
                                "file, or a tokenizers.Tokenizer; found "
                                f"{type(tokenizer).__name__}")
    try:
        from tokenizers import Tokenizer
    except ImportError as e:
        raise DependencyError("a tokenizer needs the `tokenizers` package from PyPI "
                              f"(python3 -m pip install tokenizers); {e}") from e
    path = os.fspath(tokenizer)
    file = os.path.join(path, "tokenizer.json") if os.path.isdir(path) else path
    if not os.path.isfile(file):
        raise PathNotFoundError(f"tokenizer {path!r}: no tokenizer.json there", file)
    try:
        return Tokenizer.from_file(file)
    except Exception as e:  # the package raises a bare Exception on bad JSON
        raise ArgumentError(f"cannot read the tokenizer {file!r}: {e}") from None


def vocab_size(tokenizer) -> int:
    """The ids the tokenizer can produce, added tokens included."""
    return tokenizer.get_vocab_size(with_added_tokens=True)


_MODEL_VOCAB = re.compile(r"\bvocab(_unpadded)? = (\d+) : i64")


def model_vocab(text: str) -> Optional[int]:
    """The model's vocabulary from its braid.model attribute (the unpadded
    one where the embedding is padded: the rows past it are no token), or
    None for a module without one."""
    head = text[:text.find("braid.param")] if "braid.param" in text else text[:4000]
    found = {bool(m.group(1)): int(m.group(2)) for m in _MODEL_VOCAB.finditer(head)}
    return found.get(True, found.get(False))


def check_fits(tokenizer, vocab: Optional[int]):
    """Refuses a tokenizer with more ids than the model has rows."""
    if vocab is not None and vocab_size(tokenizer) > vocab:
        raise ArgumentError(f"the tokenizer's vocabulary ({vocab_size(tokenizer)} ids) "
                            f"exceeds the model's ({vocab} ids)")


def encode_one(tokenizer, text: str, index: int, vocab: Optional[int] = None) -> list:
    """The ids of one prompt's text, special tokens added as for generation;
    an id past `vocab` (a tokenizer whose ids are not contiguous) refuses
    the prompt by its index."""
    ids = list(tokenizer.encode(text, add_special_tokens=True).ids)
    bad = [t for t in ids if vocab is not None and t >= vocab]
    if bad:
        raise ArgumentError(f"prompt {index} ({text[:40]!r}) encodes to token id {bad[0]}, "
                            f"outside the model's vocabulary of {vocab} ids")
    return ids


def decode(tokenizer, ids) -> str:
    """The text of generated ids, special tokens skipped (as
    transformers' batch_decode(..., skip_special_tokens=True))."""
    return tokenizer.decode(list(ids), skip_special_tokens=True)
