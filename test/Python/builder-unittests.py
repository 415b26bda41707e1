# The model builder's Python unit tests (python/braid/test_models.py), run as
# part of the lit suite. unittest exits non-zero if any test fails or errors.
#
# RUN: cd %braid_src/python && %python -m unittest braid.test_models 2>&1 | FileCheck %s

# CHECK: Ran {{[0-9]+}} tests
# CHECK-NEXT: {{^$}}
# CHECK-NEXT: OK
