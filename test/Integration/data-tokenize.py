# REQUIRES: tokenizers
# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t
#
# python3 -m braid.data tokenize (python/braid/data.py) with a BPE tokenizer
# trained here by the `tokenizers` package (vocabulary 200, "<eos>" its
# eos_token): the .bin holds, as uint16, each text's ids as the tokenizer
# encodes them followed by the eos id, the .npy the same stream, and
# braid-run trains llama-tiny (vocabulary 256) on the .bin, the loss falling.
import json
import os
import re
import subprocess
import sys

import numpy as np
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

work = sys.argv[1]
failures = []

texts = []
for i, body in enumerate(["the quick brown fox jumps over the lazy dog. " * 30,
                          "a stitch in time saves nine; the early bird gets the worm. " * 30]):
    texts.append(os.path.join(work, f"doc{i}.txt"))
    with open(texts[-1], "w", encoding="utf-8") as f:
        f.write(body)
tokdir = os.path.join(work, "tok")
os.makedirs(tokdir)
tok = Tokenizer(models.BPE(unk_token="<unk>"))
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.train(texts, trainers.BpeTrainer(vocab_size=200, special_tokens=["<unk>", "<eos>"],
                                     initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
tok.save(os.path.join(tokdir, "tokenizer.json"))
json.dump({"eos_token": "<eos>"}, open(os.path.join(tokdir, "tokenizer_config.json"), "w"))
eos = tok.token_to_id("<eos>")
want = []
for t in texts:
    want += tok.encode(open(t, encoding="utf-8").read(), add_special_tokens=False).ids + [eos]

for out in ("corpus.bin", "corpus.npy"):
    r = subprocess.run([sys.executable, "-m", "braid.data", "tokenize", "--tokenizer", tokdir,
                        *texts, "-o", os.path.join(work, out)], capture_output=True, text=True)
    print(r.stdout.strip() or r.stderr)
    path = os.path.join(work, out)
    got = (np.fromfile(path, dtype=np.uint16) if out.endswith(".bin") else np.load(path))
    if r.returncode or got.dtype != np.uint16 or got.tolist() != want:
        failures.append(f"{out}: {got.dtype} {got[:12].tolist()}..., want uint16 {want[:12]}...")

model = os.path.join(work, "llama.mlir")
subprocess.run([sys.executable, "-m", "braid.models", "llama-tiny", "-o", model], check=True)
r = subprocess.run(["braid-run", model, "--quiet", "--steps", "4", "--data",
                    os.path.join(work, "corpus.bin")], capture_output=True, text=True)
losses = [float(x) for x in re.findall(r"^step \d+ loss (\S+)$", r.stdout, re.M)]
print(f"llama-tiny on the tokenized corpus: {losses}")
if r.returncode or len(losses) != 4 or not losses[-1] < losses[0]:
    failures.append(f"training on the corpus: {losses}\n{r.stderr}")

if failures:
    print("FAIL:\n  " + "\n  ".join(failures))
    sys.exit(1)
print("PASS")
