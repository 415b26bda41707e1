#!/usr/bin/env python3
"""Inference on CPU ranks: decode and prefill of a Llama and a Mamba of about
0.5B parameters with `braid-run --generate`, against the memory-bandwidth
bound, a peer (JAX on CPU) and the training forward, in one run on one
machine:

  PYTHONPATH=python python3 bench/inference/run.py [--quick] [--models llama,mamba]

For each model it prints, from the summary line of `braid-run MODEL
--generate N` (docs/inference.md):
  - decode at batch 1 and 16 (prompt P, then N tokens): the median time of a
    decode step (one token for each sequence of the batch) and its p99,
    against the bandwidth bound (the bytes one step reads: the weights, the
    batch's embedding rows, the KV cache rows attended or the Mamba states
    read and written; over the copy bandwidth copy_bw.c measures with the
    same threads just before the row's run; the notes add the same bytes
    over copy_bw.c's read bandwidth, the tighter bound for a step that only
    reads) and against the same model's decode in
    JAX on the same cores (peer_decode.py; numpy as a labelled stand-in
    without JAX);
  - prefill of one 2k-token prompt: tokens/s, against the training
    forward's tokens/s (`braid-run --optimizer none`, the step's forward and
    loss at batch 1 and the same sequence length), with matmul GFLOP/s of both
    (the forward computes the LM head for every row, prefill for the last);
  - decode at batch 1 on one rank with half the threads and with --grid tp=2
    (two ranks, half the threads each), against the faster one-rank decode
    (all the threads or half of them: on a loaded machine fewer threads can
    be faster).
A row braid-run refuses (a model the inference derivation does not handle
yet, a grid generation does not run on) prints "not available: <reason>".
--quick runs small models and sizes (< 2 minutes) to check the script.
"""

import argparse
import json
import math
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path[:0] = [str(ROOT / "python"), str(ROOT / "test" / "lib"), str(ROOT / "bench")]

import machine  # noqa: E402

# name -> mode -> (preset, overrides). Full: about 0.5B parameters each (f32,
# ~2 GB of weights); the Llama has GQA (12 heads, 4 kv heads of 128).
MODELS = {
    "llama": {
        "full": ("llama-tiny", dict(name="llama-0.5b", layers=16, hidden=1536, heads=12,
                                    kv_heads=4, ffn=4096, vocab=32000)),
        "quick": ("llama-tiny", dict(name="llama-quick", layers=2, hidden=256, heads=4,
                                     kv_heads=2, ffn=704, vocab=4096)),
    },
    "mamba": {
        "full": ("mamba-790m", dict(name="mamba-0.5b", layers=32)),
        "quick": ("mamba-tiny", dict(name="mamba-quick", hidden=256, vocab=4096)),
    },
}
# prompt: the decode rows' prompt length; steps: tokens generated per request.
SIZES = {
    "full": dict(prefill=2048, prompt=128, steps=32, batches=(1, 16), copy_mib=1024,
                 forward_steps=2, timeout=1800),
    "quick": dict(prefill=256, prompt=32, steps=8, batches=(1, 16), copy_mib=256,
                  forward_steps=3, timeout=300),
}
SUMMARY = re.compile(r"prefill (\S+) s, decode median (\S+) ms/token p99 (\S+) ms/token, "
                     r"(\S+) tokens/s, cache (\d+) bytes per rank")


class NotAvailable(Exception):
    """A row braid-run (or the peer) could not produce; the message says why."""


def reason(stderr, stdout=""):
    """The line of a failed run that says why: its first error, else its last line."""
    lines = [l.strip() for l in (stderr + "\n" + stdout).splitlines() if l.strip()]
    for line in lines:
        if "error" in line or "refuse" in line or "runs on one rank" in line:
            return re.sub(r"^\S+:\d+:\d+: error: ", "", line)[:160]
    return lines[-1][:160] if lines else "no output"


def run(cmd, timeout, env=None):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise NotAvailable(f"timed out after {timeout} s")
    return r


# --------------------------------------------------------------------------
# the machine
# --------------------------------------------------------------------------

def copy_bandwidth(args, tmp):
    """(copy, read) GB/s of copy_bw.c with args.threads: the copy as STREAM
    counts it (read + written bytes per second), the read as bytes summed per
    second."""
    exe = pathlib.Path(tmp) / "copy_bw"
    if not exe.exists():
        cc = os.environ.get("CC", "cc")
        subprocess.run([cc, "-O3", "-march=native", "-pthread", "-o", str(exe),
                        str(HERE / "copy_bw.c")], check=True)
    out = subprocess.run([str(exe), str(args.sizes["copy_mib"]), str(args.threads), "5"],
                         capture_output=True, text=True, check=True).stdout
    return (float(re.search(r"copy_bw GB/s: (\S+)", out).group(1)),
            float(re.search(r"read_bw GB/s: (\S+)", out).group(1)))


def pinned(threads):
    """A command prefix that keeps a peer on `threads` cores, as Braid's --cpu-threads."""
    if threads < (os.cpu_count() or 1) and shutil.which("taskset"):
        return ["taskset", "-c", f"0-{threads - 1}"]
    return []


# --------------------------------------------------------------------------
# the model: parameters and bytes read per decode step
# --------------------------------------------------------------------------

class Model:
    def __init__(self, key, preset_name, overrides):
        from braid.presets import preset
        from braid_ref import models
        self.key, self.preset, self.overrides = key, preset_name, overrides
        self.config = preset(preset_name, **overrides)
        self.cfg = self.config.model_attrs()
        self.specs = models.param_specs(self.config)
        self.sizes = {name: math.prod(shape) for name, shape, *_ in self.specs}
        self.params = sum(self.sizes.values())

    def write(self, path, batch, seq):
        from braid.presets import build
        path.write_text(build(self.preset, **self.overrides, batch=batch, seq=seq))
        return path

    def weight_bytes_per_step(self, batch):
        """Weights one decode step reads: all but the embedding table (of which the
        batch's rows), unless the LM head is the tied table."""
        table = self.sizes["tok_embeddings"]
        tied = self.cfg.get("tied_embeddings", False)
        rows = batch * self.cfg["hidden"]
        return 4 * (self.params - (0 if tied else table) + rows)

    def state_bytes_per_step(self, batch, prompt, steps):
        """Cache or state bytes one decode step reads (and, for Mamba, writes back),
        averaged over the N - 1 decode steps at positions prompt .. prompt + N - 2."""
        c = self.cfg
        if c["family"] == "mamba":
            e = c.get("d_inner", c["expand"] * c["hidden"])
            # The conv state keeps the last d_conv - 1 inputs.
            return 2 * 4 * c["layers"] * batch * e * (c["d_conv"] - 1 + c["d_state"])
        kv = c.get("kv_heads", c["heads"])
        hd = c.get("head_dim", c["hidden"] // c["heads"])
        rows = prompt + 1 + (steps - 2) / 2          # mean rows attended (t <= p)
        return 4 * c["layers"] * batch * 2 * kv * hd * rows

    def matmul_flops(self, tokens, head_rows):
        """2 x params x tokens of the layers' matmuls, the LM head on head_rows
        rows, and causal attention's two products (Llama)."""
        c = self.cfg
        table = self.sizes["tok_embeddings"]
        head = self.sizes.get("output", table)
        layers = self.params - table - self.sizes.get("output", 0)
        flops = 2 * layers * tokens + 2 * head * head_rows
        if c["family"] == "llama":
            flops += 2 * c["layers"] * c["hidden"] * tokens * tokens   # 2 x (QK^T, PV) / 2
        return flops


# --------------------------------------------------------------------------
# the runs
# --------------------------------------------------------------------------

def braid_generate(args, model, tmp, batch, prompt, steps, grid=None, threads=None):
    """(prefill s, decode median ms, p99 ms, cache bytes) of one --generate run."""
    context = prompt + steps
    path = model.write(pathlib.Path(tmp) / f"{model.key}-gen.mlir", 1, context)
    cmd = [str(args.build / "bin" / "braid-run"), str(path), "--generate", str(steps),
           "--batch", str(batch), "--prompt-len", str(prompt), "--context", str(context),
           "--cpu-threads", str(threads or args.threads)]
    if grid:
        cmd += ["--grid", grid]
    r = run(cmd, args.timeout)
    m = SUMMARY.search(r.stdout)
    if r.returncode or not m:
        raise NotAvailable(reason(r.stderr, r.stdout))
    return float(m.group(1)), float(m.group(2)), float(m.group(3)), int(m.group(5))


def braid_forward(args, model, tmp, seq):
    """Seconds of the training forward (--optimizer none) at batch 1 and `seq`."""
    path = model.write(pathlib.Path(tmp) / f"{model.key}-fwd.mlir", 1, seq)
    cmd = [str(args.build / "bin" / "braid-run"), str(path), "--steps", str(args.forward_steps),
           "--optimizer", "none", "--cpu-threads", str(args.threads)]
    r = run(cmd, args.timeout)
    m = re.search(r"steps in \S+ s \((\S+) ms/step\)", r.stderr + r.stdout)
    if r.returncode or not m:
        raise NotAvailable(reason(r.stderr, r.stdout))
    return float(m.group(1)) / 1e3


def peer_decode(args, model, batch, prompt, steps):
    """(peer name, median ms, p99 ms) of peer_decode.py on the same cores."""
    job = dict(preset=model.preset, overrides=model.overrides, batch=batch, prompt=prompt,
               steps=steps)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "python"),
                                                       os.environ.get("PYTHONPATH", "")]))
    if args.peer == "numpy":
        env["BRAID_BENCH_PEER"] = "numpy"
    cmd = pinned(args.threads) + [sys.executable, str(HERE / "peer_decode.py"), json.dumps(job)]
    r = run(cmd, args.timeout, env=env)
    if r.returncode:
        raise NotAvailable("peer: " + reason(r.stderr, r.stdout))
    out = json.loads(r.stdout.strip().splitlines()[-1])
    return out["peer"], out["median_ms"], out["p99_ms"]


def attempt(fn, *a, **kw):
    try:
        return fn(*a, **kw), None
    except NotAvailable as e:
        return None, str(e)


# --------------------------------------------------------------------------
# the table
# --------------------------------------------------------------------------

def ratio(a, b):
    return f"{a / b:.2f}" if a and b else "-"


def row(model, case, braid, bound="-", vs_bound="-", peer="-", vs_peer="-", note=""):
    print(f"{model:<12} {case:<22} {braid:>24} {bound:>10} {vs_bound:>7} {peer:>22} "
          f"{vs_peer:>7}  {note}", flush=True)


def decode_rows(args, model, tmp, peers):
    """Decode at each batch: the step against its bound and the peer. Returns
    the batch-1 median (the TP rows' baseline) or None, and the reason
    braid-run refused the model (which every later --generate run would
    repeat, so they are not started) or None."""
    base, refused = None, None
    s = args.sizes
    for b in s["batches"]:
        case = f"decode b{b} (prompt {s['prompt']})"
        # On a shared machine the bandwidth moves with other work: each row's
        # bound uses the copy bandwidth measured just before its run.
        bandwidth, read_bw = copy_bandwidth(args, tmp)
        got, why = (None, refused) if refused else attempt(
            braid_generate, args, model, tmp, b, s["prompt"], s["steps"])
        bytes_ = (model.weight_bytes_per_step(b)
                  + model.state_bytes_per_step(b, s["prompt"], s["steps"]))
        bound_ms = 1e3 * bytes_ / (bandwidth * 1e9)
        read_ms = 1e3 * bytes_ / (read_bw * 1e9)
        peer, pwhy = (None, None) if args.peer == "none" else attempt(
            peer_decode, args, model, b, s["prompt"], s["steps"])
        if peer:
            peers.add(peer[0])
        peer_txt = f"{peer[1]:.2f} ({peer[2]:.2f})" if peer else "-"
        if not got:
            # A refusal or a compile error repeats in every later run; a timeout may not.
            refused = None if why.startswith("timed out") else why
            row(model.key, case, "not available", f"{bound_ms:.2f}", "-", peer_txt, "-",
                f"not available: {why}" + (f"; {pwhy}" if pwhy else ""))
            continue
        _, med, p99, cache = got
        if b == 1:
            base = med
        per_tok = f", {med / b:.2f}/tok" if b > 1 else ""
        note = (f"{bytes_ / 1e9:.3f} GB/step at {bandwidth:.1f} GB/s, cache "
                f"{cache / 1e6:.1f} MB; read bound {read_ms:.2f} ms at {read_bw:.1f} GB/s: "
                f"{ratio(med, read_ms)}")
        row(model.key, case, f"{med:.2f} ({p99:.2f}){per_tok}", f"{bound_ms:.2f}",
            ratio(med, bound_ms), peer_txt, ratio(med, peer[1] if peer else None),
            note + (f"; {pwhy}" if pwhy else ""))
    return base, refused


def prefill_rows(args, model, tmp, refused):
    s = args.sizes
    n = s["prefill"]
    case = f"prefill {n} tok/s"
    got, why = (None, refused) if refused else attempt(
        braid_generate, args, model, tmp, 1, n, 1)
    fwd, fwhy = attempt(braid_forward, args, model, tmp, n)
    fwd_txt = f"{n / fwd:.1f} tok/s" if fwd else f"not available: {fwhy}"
    fwd_gfs = f"{model.matmul_flops(n, n) / fwd / 1e9:.1f}" if fwd else "-"
    if not got:
        row(model.key, case, "not available", note=f"not available: {why}; training forward "
            f"{fwd_txt} ({fwd_gfs} GFLOP/s)")
        return
    pre_s = got[0]
    pre_gfs = model.matmul_flops(n, 1) / pre_s / 1e9
    row(model.key, case, f"{n / pre_s:.1f} ({pre_s:.2f} s)", "-", "-", f"fwd {fwd_txt}",
        ratio(pre_s, fwd), f"matmul GFLOP/s: prefill {pre_gfs:.1f}, training forward {fwd_gfs}")


def tp_rows(args, model, tmp, base, refused):
    """Decode at batch 1 on one rank with half the threads, then on two ranks
    (tp=2) with half the threads each, against the faster one-rank run (the
    decode b1 row with all the threads, or the half-thread one)."""
    s = args.sizes
    half = max(1, args.threads // 2)
    runs = [(None, f"decode b1 tp=1 ({half} thr)")] if half < args.threads else []
    runs.append(("tp=2", f"decode b1 tp=2 ({half} thr/rank)"))
    one_rank = [(base, f"{args.threads} thr")] if base else []
    for grid, case in runs:
        got, why = (None, refused) if refused else attempt(
            braid_generate, args, model, tmp, 1, s["prompt"], s["steps"], grid=grid, threads=half)
        if not got:
            row(model.key, case, "not available", note=f"not available: {why}")
            continue
        med, p99 = got[1], got[2]
        against, threads = min(one_rank) if one_rank else (None, "")
        row(model.key, case, f"{med:.2f} ({p99:.2f})", "-", "-",
            f"tp=1 {against:.2f}" if against else "-", ratio(med, against),
            f"against the faster one-rank decode b1 ({threads})" if against else "")
        if grid is None:
            one_rank.append((med, f"{half} thr"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", type=pathlib.Path, default=ROOT / "build")
    ap.add_argument("--models", default="llama,mamba")
    ap.add_argument("--quick", action="store_true", help="small models and sizes (< 2 min)")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                    help="Braid's --cpu-threads, the peer's cores and copy_bw's threads")
    ap.add_argument("--peer", choices=("jax", "numpy", "none"), default="jax",
                    help="jax (numpy when JAX is not installed), numpy, or none")
    ap.add_argument("--no-tp", action="store_true", help="skip the tp=2 row")
    args = ap.parse_args()
    mode = "quick" if args.quick else "full"
    args.sizes = SIZES[mode]
    args.timeout = args.sizes["timeout"]
    args.forward_steps = args.sizes["forward_steps"]
    s = args.sizes

    with tempfile.TemporaryDirectory(prefix="braid-bench-inference-") as tmp:
        first, first_read = copy_bandwidth(args, tmp)
        print(f"machine: {machine.describe()}; braid --cpu-threads {args.threads}; "
              f"copy bandwidth {first:.1f} GB/s ({args.threads} threads, read + written, "
              f"copy_bw.c {s['copy_mib']} MiB; again before each decode row and at the end), "
              f"read bandwidth {first_read:.1f} GB/s")
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(f"mode {mode}: decode rows prompt {s['prompt']} then {s['steps']} tokens; prefill "
              f"{s['prefill']} tokens at batch 1; f32; load average at start {load:.2f}")
        print("decode times are ms per step (one token for each sequence), median (p99); "
              "bound: bytes read per step / copy bandwidth")
        print("against: the peer's decode step (ms, median (p99)), braid's training forward, "
              "or braid's one-rank decode; ratios are time over time (< 1: the braid row is "
              "faster)")
        row("model", "case", "braid", "bound ms", "/bound", "against", "ratio", "notes")
        peers = set()
        for key in args.models.split(","):
            preset_name, overrides = MODELS[key][mode]
            model = Model(key, preset_name, overrides)
            print(f"-- {overrides['name']} ({model.cfg['family']}): "
                  f"{model.params / 1e6:.0f}M parameters, {4 * model.params / 1e9:.2f} GB f32",
                  flush=True)
            base, refused = decode_rows(args, model, tmp, peers)
            prefill_rows(args, model, tmp, refused)
            if not args.no_tp:
                tp_rows(args, model, tmp, base, refused)
        last, last_read = copy_bandwidth(args, tmp)
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(f"copy bandwidth at the end {last:.1f} GB/s (at the start {first:.1f}), read "
              f"{last_read:.1f} GB/s (at the start {first_read:.1f}); "
              f"load average at the end {load:.2f}")
        print(f"peer: {', '.join(sorted(peers)) or 'none'} on {args.threads} cores "
              f"({'taskset' if pinned(args.threads) else 'all cores'})")


if __name__ == "__main__":
    main()
