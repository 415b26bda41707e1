# Every preset of `python3 -m braid.models --list` (the tiny test models and the
# published ones at their default sizes) parses and verifies in braid-opt, and
# braid-opt's parameter count equals the builder's. The driver stops at the
# first failure with `FAIL: <preset>: <braid-opt's diagnostics>`.
#
# RUN: %python %S/Inputs/verify_presets.py braid-opt | FileCheck %s

# CHECK-NOT: FAIL
# CHECK: ok gpt2-small parameters 124439808 layers 12
# CHECK: ok gpt3-175b
# CHECK: ok llama3-405b
# CHECK: ok mixtral-8x7b
# CHECK: ok mamba-2.8b
# CHECK: ok jamba-v0.1
# CHECK: ok gpt-tiny
# CHECK: ok llama-tiny
# CHECK: ok mamba-tiny
# CHECK: ok moe-tiny
# CHECK: ok hybrid-tiny
# CHECK: verified {{[0-9]+}} presets
