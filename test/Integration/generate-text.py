# REQUIRES: tokenizers
# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t
#
# braid-run --generate --tokenizer DIR --prompt-text TEXT (issue 46, "Text"),
# with a BPE tokenizer trained here by the `tokenizers` package (200 ids, a
# BOS added by its post-processor): the prompts are encoded as
# tokenizer.encode does (BOS first), the ids are those braid-run prints for
# the encoded ids through --prompts, and each "request R text:" line is the
# JSON string of tokenizer.decode(ids, skip_special_tokens=True). A missing
# tokenizer.json is refused with its path, and --tokenizer with --prompts
# adds the text to an ids run.
import json
import os
import re
import subprocess
import sys

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

work = sys.argv[1]
failures = []
model = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                     "llama-tiny.mlir")

corpus = os.path.join(work, "corpus.txt")
with open(corpus, "w", encoding="utf-8") as f:
    f.write("the quick brown fox jumps over the lazy dog. " * 20 +
            "a stitch in time saves nine; the early bird gets the worm. " * 20)
tok = Tokenizer(models.BPE(unk_token="<unk>"))
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
tok.train([corpus], trainers.BpeTrainer(vocab_size=200, special_tokens=["<unk>", "<s>"]))
tok.post_processor = processors.TemplateProcessing(single="<s> $A",
                                                   special_tokens=[("<s>", tok.token_to_id("<s>"))])
tokdir = os.path.join(work, "tok")
os.makedirs(tokdir)
tok.save(os.path.join(tokdir, "tokenizer.json"))

texts = ["the quick brown fox", "a stitch in time"]
r = subprocess.run(["braid-run", model, "--quiet", "--generate", "4", "--tokenizer", tokdir,
                    *[a for t in texts for a in ("--prompt-text", t)]],
                   capture_output=True, text=True)
print(r.stdout)
ids = {int(m.group(1)): [int(t) for t in m.group(2).split()]
       for m in re.finditer(r"^request (\d+): ([\d ]+)$", r.stdout, re.M)}
decoded = {int(m.group(1)): json.loads(m.group(2))
           for m in re.finditer(r"^request (\d+) text: (.*)$", r.stdout, re.M)}
if r.returncode or sorted(ids) != [0, 1] or sorted(decoded) != [0, 1]:
    failures.append(f"--prompt-text: exit {r.returncode}, {ids}, {decoded}\n{r.stderr}")
for i in sorted(ids):
    want = tok.decode(ids[i], skip_special_tokens=True)
    if decoded.get(i) != want:
        failures.append(f"request {i}: text {decoded.get(i)!r}, want {want!r}")

# The same ids as braid-run on the encoded prompts: text is only a wrapper.
encoded = [tok.encode(t).ids for t in texts]
if any(e[0] != tok.token_to_id("<s>") for e in encoded):
    failures.append(f"no BOS in {encoded}")
prompts = os.path.join(work, "prompts.txt")
with open(prompts, "w") as f:
    f.write("".join(" ".join(map(str, e)) + "\n" for e in encoded))
r = subprocess.run(["braid-run", model, "--quiet", "--generate", "4", "--prompts", prompts,
                    "--tokenizer", tokdir], capture_output=True, text=True)
plain = {int(m.group(1)): [int(t) for t in m.group(2).split()]
         for m in re.finditer(r"^request (\d+): ([\d ]+)$", r.stdout, re.M)}
if r.returncode or plain != ids or "request 1 text: " not in r.stdout:
    failures.append(f"--prompts with --tokenizer: {plain}, want {ids}\n{r.stdout}{r.stderr}")

r = subprocess.run(["braid-run", model, "--quiet", "--generate", "4", "--tokenizer",
                    os.path.join(work, "missing"), "--prompt-text", "hello"],
                   capture_output=True, text=True)
print(r.stderr)
if r.returncode == 0 or "no tokenizer.json there" not in r.stderr or \
        "python3 -m braid.data encode failed" not in r.stderr:
    failures.append(f"a missing tokenizer: exit {r.returncode}\n{r.stderr}")

if failures:
    print("FAIL:\n  " + "\n  ".join(failures))
    sys.exit(1)
print("PASS")
