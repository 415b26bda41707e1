#!/usr/bin/env bash
# A real run, end to end: train a BPE tokenizer on the license texts every
# Debian machine has, tokenize them, train a small Llama on a dp x tp grid with
# a held-out validation file, export it as a Hugging Face directory, load the
# export back with --init-from (a few fine-tuning steps, then generation), and
# check that it learned. Usage: examples/hf-finetune/run.sh [WORKDIR]
# (default: a new temporary directory). README.md lists the variables below.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
B=${BRAID_BUILD_DIR:-$ROOT/build}
export BRAID_BUILD_DIR=$B
export PYTHONPATH=$ROOT/python${PYTHONPATH:+:$PYTHONPATH}
export PATH=$B/bin:$PATH

CORPUS=${CORPUS:-/usr/share/common-licenses}
VAL_FILE=${VAL_FILE:-GPL-2}        # held out: the validation split
VOCAB=${VOCAB:-2048}
HIDDEN=${HIDDEN:-128}
LAYERS=${LAYERS:-4}
HEADS=${HEADS:-4}
SEQ=${SEQ:-128}
BATCH=${BATCH:-8}                  # global batch, split over dp
GRID=${GRID:-dp=2,tp=2}
STEPS=${STEPS:-500}
LR=${LR:-0.001}
EVAL_EVERY=${EVAL_EVERY:-25}
FT_STEPS=${FT_STEPS:-20}
FT_LR=${FT_LR:-0.0003}
GEN_GRID=${GEN_GRID:-tp=2}
GEN_TOKENS=${GEN_TOKENS:-40}
PROMPT=${PROMPT:-This program is free software}

WORK=${1:-$(mktemp -d /tmp/braid-hf-finetune.XXXXXX)}
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
cd "$WORK"
START=$SECONDS
step() { printf '\n== [%ds] %s\n' "$((SECONDS - START))" "$*"; }

step "work dir $WORK; corpus $CORPUS (held out: $VAL_FILE); grid $GRID, $STEPS steps"
[ -f "$CORPUS/$VAL_FILE" ] || { echo "run.sh: no $CORPUS/$VAL_FILE" >&2; exit 2; }
TRAIN_FILES=()
for f in "$CORPUS"/*; do
  # Regular files only (GPL, LGPL and GFDL are links to a version).
  if [ -f "$f" ] && [ ! -L "$f" ] && [ "$(basename "$f")" != "$VAL_FILE" ]; then
    TRAIN_FILES+=("$f")
  fi
done
echo "training files: ${#TRAIN_FILES[@]} ($(cat "${TRAIN_FILES[@]}" | wc -c) bytes);" \
  "validation: $VAL_FILE ($(wc -c < "$CORPUS/$VAL_FILE") bytes)"

step "1. train a byte-level BPE tokenizer of $VOCAB tokens on the training files"
mkdir -p tokenizer
python3 - "$VOCAB" tokenizer "${TRAIN_FILES[@]}" <<'EOF'
import json, sys
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
vocab, out, files = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
tok.train(files, trainers.BpeTrainer(vocab_size=vocab, special_tokens=["<|endoftext|>"],
                                     initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                     show_progress=False))
tok.save(f"{out}/tokenizer.json")
# braid.data reads the end-of-text id it appends after each file from here.
json.dump({"eos_token": "<|endoftext|>"}, open(f"{out}/tokenizer_config.json", "w"))
print(f"{out}/tokenizer.json: {tok.get_vocab_size()} tokens")
EOF

step "2. tokenize: train.bin and val.bin (uint16 ids, an end-of-text id after each file)"
python3 -m braid.data tokenize --tokenizer tokenizer "${TRAIN_FILES[@]}" -o train.bin
python3 -m braid.data tokenize --tokenizer tokenizer "$CORPUS/$VAL_FILE" -o val.bin

step "3. a LlamaForCausalLM config.json and its Braid model (seq $SEQ, batch $BATCH)"
mkdir -p config
python3 - "$VOCAB" "$HIDDEN" "$LAYERS" "$HEADS" "$SEQ" > config/config.json <<'EOF'
import json, sys
vocab, hidden, layers, heads, seq = map(int, sys.argv[1:])
print(json.dumps({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": vocab,
    "hidden_size": hidden, "intermediate_size": 3 * hidden, "num_hidden_layers": layers,
    "num_attention_heads": heads, "num_key_value_heads": heads,
    "max_position_embeddings": seq, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
    "hidden_act": "silu", "tie_word_embeddings": False, "eos_token_id": 0}, indent=1))
EOF
python3 -m braid.models --hf config --seq "$SEQ" --batch "$BATCH" -o model.mlir
echo "model.mlir: $(python3 -m braid.models --hf config --seq "$SEQ" --count-params) parameters"

# Validation averages the held-out file's windows of SEQ + 1 tokens, as many
# whole global batches of them as it holds.
VAL_IDS=$(( $(stat -c %s val.bin) / 2 ))
EVAL_BATCHES=$(( (VAL_IDS - 1) / SEQ / BATCH ))
[ "$EVAL_BATCHES" -ge 1 ] || EVAL_BATCHES=1
LN_VOCAB=$(python3 -c "import math; print(f'{math.log($VOCAB):.3f}')")

step "4. train $STEPS steps on $GRID (validation every $EVAL_EVERY steps over" \
  "$EVAL_BATCHES batches; ln(vocab) = $LN_VOCAB)"
braid-run model.mlir --grid "$GRID" --steps "$STEPS" --lr "$LR" --data train.bin --shuffle \
  --eval-data val.bin --eval-every "$EVAL_EVERY" --eval-batches "$EVAL_BATCHES" \
  --checkpoint-dir checkpoints --quiet > train.log
# Print every validation loss, the training loss at the same steps, the summary.
awk -v k="$EVAL_EVERY" '/^step [0-9]+ loss/ { if ($2 == 1 || $2 % k == 0) print; next }
                        { print }' train.log

step "5. export the checkpoint as a Hugging Face directory"
python3 -m braid.checkpoint export-hf checkpoints export --config config
ls -l export

step "6. load the export: its weights map and model, $FT_STEPS fine-tuning steps on $GRID"
python3 -m braid.hf_weights export --seq "$SEQ" --batch "$BATCH" -o weights.json
python3 -m braid.models --hf export --seq "$SEQ" --batch "$BATCH" -o model-export.mlir
braid-run model-export.mlir --init-from weights.json --grid "$GRID" --steps "$FT_STEPS" \
  --lr "$FT_LR" --seed 1 --data train.bin --shuffle --eval-data val.bin \
  --eval-every "$FT_STEPS" --eval-batches "$EVAL_BATCHES" --quiet > finetune.log
awk '/^step 1 loss/ || /validation/' finetune.log

step "7. generate $GEN_TOKENS tokens from the export on $GEN_GRID after \"$PROMPT\""
braid-run model-export.mlir --init-from weights.json --grid "$GEN_GRID" --generate "$GEN_TOKENS" \
  --batch 1 --tokenizer tokenizer --prompt-text "$PROMPT" --quiet > generate.log
grep '^request 0' generate.log

step "8. checks"
python3 - "$LN_VOCAB" <<'EOF'
import json, re, sys
ln_vocab = float(sys.argv[1])

def losses(path, kind):
    pattern = re.compile(r"^step (\d+) validation loss (\S+)$" if kind == "validation"
                         else r"^step (\d+) loss (\S+)$")
    return [float(m.group(2)) for m in map(pattern.match, open(path)) if m]

train, val = losses("train.log", "train"), losses("train.log", "validation")
tuned = losses("finetune.log", "train")
failures = []
first, last = sum(train[:10]) / 10, sum(train[-10:]) / 10
print(f"training loss, mean of the first 10 steps {first:.3f}, of the last 10 {last:.3f} "
      f"({100 * (1 - last / first):.0f}% lower)")
if not last <= 0.75 * first:
    failures.append("the training loss did not fall by 25%")
print(f"validation loss, first {val[0]:.3f}, last {val[-1]:.3f} "
      f"({100 * (1 - val[-1] / val[0]):.0f}% lower)")
if not val[-1] <= 0.75 * val[0]:
    failures.append("the validation loss did not fall by 25%")
print(f"the export's first fine-tuning loss {tuned[0]:.3f} (the last 10 training steps' "
      f"mean {last:.3f}; ln(vocab) {ln_vocab:.3f})")
if not tuned[0] <= 1.25 * last:
    failures.append("the loaded export's loss is not that of the trained model")
text = [line.split(":", 1)[1].strip() for line in open("generate.log")
        if line.startswith("request 0 text:")]
if not text or not json.loads(text[0]).strip():
    failures.append("generation printed no text (nothing but white space)")
for f in failures:
    print(f"FAIL: {f}")
if failures:
    sys.exit(1)
print("all checks pass")
EOF
step "done in $((SECONDS - START)) s"
