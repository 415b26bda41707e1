"""Trains llama-tiny as train.c (docs/api.md) does, ten steps on dp=2 checked
against one rank, through the braid package found on PYTHONPATH (an
installation's), and says where its bindings were loaded from. A failure is
printed as `BraidError: MESSAGE` with exit status 1."""
import sys

import braid
import braid._braid

print("bindings:", braid._braid.__file__)
try:
    out = braid.run("llama-tiny", grid="dp=2", steps=10, verify=True)
except braid.BraidError as error:
    print(f"BraidError: {error}")
    sys.exit(1)
print(f"losses: {len(out.losses)}, verified: {out.verified}")
