// RUN: braid-opt %s -split-input-file -verify-diagnostics

// Each diagnostic of BraidSampleOps.td's verifiers (SampleOps.cpp).

func.func @rank(%l: tensor<194xf32>, %s: tensor<2xi64>, %st: tensor<2xi64>, %t: tensor<2xf32>, %k: tensor<2xi32>, %p: tensor<2xf32>) {
  // expected-error @+1 {{'braid.sample' op logits must be [B, V], found 'tensor<194xf32>'}}
  %ids = braid.sample greedy %l, %s, %st, %t, %k, %p {vocab = 97} : (tensor<194xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xf32>, tensor<2xi32>, tensor<2xf32>) -> tensor<2xi32>
  return
}

// -----

func.func @vocab(%l: tensor<2x97xf32>, %s: tensor<2xi64>, %st: tensor<2xi64>, %t: tensor<2xf32>, %k: tensor<2xi32>, %p: tensor<2xf32>) {
  // expected-error @+1 {{'braid.sample' op vocab must be positive, found 0}}
  %ids = braid.sample greedy %l, %s, %st, %t, %k, %p {vocab = 0} : (tensor<2x97xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xf32>, tensor<2xi32>, tensor<2xf32>) -> tensor<2xi32>
  return
}

// -----

func.func @cap(%l: tensor<2x97xf32>, %s: tensor<2xi64>, %st: tensor<2xi64>, %t: tensor<2xf32>, %k: tensor<2xi32>, %p: tensor<2xf32>) {
  // expected-error @+1 {{'braid.sample' op top_k_cap must be >= 0, found -1}}
  %ids = braid.sample sample %l, %s, %st, %t, %k, %p {top_k_cap = -1, vocab = 97} : (tensor<2x97xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xf32>, tensor<2xi32>, tensor<2xf32>) -> tensor<2xi32>
  return
}

// -----

func.func @columns(%l: tensor<2x97xf32>, %s: tensor<2xi64>, %st: tensor<2xi64>, %t: tensor<2xf32>, %k: tensor<2xi32>, %p: tensor<2xf32>) {
  // expected-error @+1 {{'braid.sample' op vocab 98 exceeds the logits' 97 columns}}
  %ids = braid.sample greedy %l, %s, %st, %t, %k, %p {vocab = 98} : (tensor<2x97xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xf32>, tensor<2xi32>, tensor<2xf32>) -> tensor<2xi32>
  return
}

// -----

func.func @seeds(%l: tensor<2x97xf32>, %s: tensor<3xi64>, %st: tensor<2xi64>, %t: tensor<2xf32>, %k: tensor<2xi32>, %p: tensor<2xf32>) {
  // expected-error @+1 {{'braid.sample' op seeds must be 'tensor<2xi64>', found 'tensor<3xi64>'}}
  %ids = braid.sample greedy %l, %s, %st, %t, %k, %p {vocab = 97} : (tensor<2x97xf32>, tensor<3xi64>, tensor<2xi64>, tensor<2xf32>, tensor<2xi32>, tensor<2xf32>) -> tensor<2xi32>
  return
}

// -----

func.func @ids(%l: tensor<2x97xf32>, %s: tensor<2xi64>, %st: tensor<2xi64>, %t: tensor<2xf32>, %k: tensor<2xi32>, %p: tensor<2xf32>) {
  // expected-error @+1 {{'braid.sample' op ids must be 'tensor<2xi32>', found 'tensor<4xi32>'}}
  %ids = braid.sample greedy %l, %s, %st, %t, %k, %p {vocab = 97} : (tensor<2x97xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xf32>, tensor<2xi32>, tensor<2xf32>) -> tensor<4xi32>
  return
}

// -----

func.func @max_state(%l: tensor<2x49xf32>, %t: tensor<2xf32>, %k: tensor<2xi32>, %p: tensor<2xf32>, %o: index, %s: tensor<2x16xi64>) {
  // expected-error @+1 {{'braid.sample_local' op phase max makes the state: it takes none}}
  %w = braid.sample_local max %l state %s, %t, %k, %p at %o {top_k_cap = 0, vocab = 97} : (tensor<2x49xf32>, tensor<2x16xi64>, tensor<2xf32>, tensor<2xi32>, tensor<2xf32>, index) -> tensor<2x2xi64>
  return
}

// -----

func.func @no_state(%l: tensor<2x49xf32>, %t: tensor<2xf32>, %k: tensor<2xi32>, %p: tensor<2xf32>, %o: index, %s: tensor<2x16xi64>) {
  // expected-error @+1 {{'braid.sample_local' op every phase but max takes the state}}
  %w = braid.sample_local draw %l, %t, %k, %p at %o {top_k_cap = 0, vocab = 97} : (tensor<2x49xf32>, tensor<2xf32>, tensor<2xi32>, tensor<2xf32>, index) -> tensor<2x1xi64>
  return
}

// -----

func.func @state_shape(%l: tensor<2x49xf32>, %t: tensor<2xf32>, %k: tensor<2xi32>, %p: tensor<2xf32>, %o: index, %s: tensor<2x15xi64>) {
  // expected-error @+1 {{'braid.sample_local' op state must be [2, 10 + 3 ranks] (i64), found 'tensor<2x15xi64>'}}
  %w = braid.sample_local draw %l state %s, %t, %k, %p at %o {top_k_cap = 0, vocab = 97} : (tensor<2x49xf32>, tensor<2x15xi64>, tensor<2xf32>, tensor<2xi32>, tensor<2xf32>, index) -> tensor<2x1xi64>
  return
}

// -----

func.func @words(%l: tensor<2x49xf32>, %t: tensor<2xf32>, %k: tensor<2xi32>, %p: tensor<2xf32>, %o: index, %s: tensor<2x16xi64>) {
  // expected-error @+1 {{'braid.sample_local' op words must be 'tensor<2x10xi64>', found 'tensor<2x2xi64>'}}
  %w = braid.sample_local mass %l state %s, %t, %k, %p at %o {top_k_cap = 4, vocab = 97} : (tensor<2x49xf32>, tensor<2x16xi64>, tensor<2xf32>, tensor<2xi32>, tensor<2xf32>, index) -> tensor<2x2xi64>
  return
}

// -----

func.func @local_rows(%l: tensor<2x49xf32>, %t: tensor<3xf32>, %k: tensor<2xi32>, %p: tensor<2xf32>, %o: index) {
  // expected-error @+1 {{'braid.sample_local' op temperature must be 'tensor<2xf32>', found 'tensor<3xf32>'}}
  %w = braid.sample_local max %l, %t, %k, %p at %o {top_k_cap = 0, vocab = 97} : (tensor<2x49xf32>, tensor<3xf32>, tensor<2xi32>, tensor<2xf32>, index) -> tensor<2x2xi64>
  return
}

// -----

func.func @merge_rows(%g: tensor<4x2xi64>, %t: tensor<2x1xf32>, %k: tensor<2xi32>, %p: tensor<2xf32>, %s: tensor<2xi64>, %st: tensor<2xi64>) {
  // expected-error @+1 {{'braid.sample_merge' op temperature must be [B], found 'tensor<2x1xf32>'}}
  %m = braid.sample_merge max %g, %t, %k, %p, %s, %st {top_k_cap = 0, vocab = 97} : (tensor<4x2xi64>, tensor<2x1xf32>, tensor<2xi32>, tensor<2xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<2x16xi64>
  return
}

// -----

func.func @merge_steps(%g: tensor<4x2xi64>, %t: tensor<2xf32>, %k: tensor<2xi32>, %p: tensor<2xf32>, %s: tensor<2xi64>, %st: tensor<3xi64>) {
  // expected-error @+1 {{'braid.sample_merge' op steps must be 'tensor<2xi64>', found 'tensor<3xi64>'}}
  %m = braid.sample_merge max %g, %t, %k, %p, %s, %st {top_k_cap = 0, vocab = 97} : (tensor<4x2xi64>, tensor<2xf32>, tensor<2xi32>, tensor<2xf32>, tensor<2xi64>, tensor<3xi64>) -> tensor<2x16xi64>
  return
}

// -----

func.func @gathered(%g: tensor<3x2xi64>, %t: tensor<2xf32>, %k: tensor<2xi32>, %p: tensor<2xf32>, %s: tensor<2xi64>, %st: tensor<2xi64>) {
  // expected-error @+1 {{'braid.sample_merge' op gathered must be [ranks x 2, 2] (every rank's words of phase max), found 'tensor<3x2xi64>'}}
  %m = braid.sample_merge max %g, %t, %k, %p, %s, %st {top_k_cap = 0, vocab = 97} : (tensor<3x2xi64>, tensor<2xf32>, tensor<2xi32>, tensor<2xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<2x16xi64>
  return
}

// -----

func.func @merge_state(%g: tensor<4x2xi64>, %t: tensor<2xf32>, %k: tensor<2xi32>, %p: tensor<2xf32>, %s: tensor<2xi64>, %st: tensor<2xi64>, %x: tensor<2x13xi64>) {
  // expected-error @+1 {{'braid.sample_merge' op state holds 1 ranks, the gathered words 2}}
  %m = braid.sample_merge shares %g state %x, %t, %k, %p, %s, %st {top_k_cap = 0, vocab = 97} : (tensor<4x2xi64>, tensor<2x13xi64>, tensor<2xf32>, tensor<2xi32>, tensor<2xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<2x16xi64>
  return
}

// -----

func.func @merge_no_state(%g: tensor<4x2xi64>, %t: tensor<2xf32>, %k: tensor<2xi32>, %p: tensor<2xf32>, %s: tensor<2xi64>, %st: tensor<2xi64>) {
  // expected-error @+1 {{'braid.sample_merge' op every phase but max takes the state}}
  %m = braid.sample_merge shares %g, %t, %k, %p, %s, %st {top_k_cap = 0, vocab = 97} : (tensor<4x2xi64>, tensor<2xf32>, tensor<2xi32>, tensor<2xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<2x16xi64>
  return
}

// -----

func.func @merge_vocab(%g: tensor<4x2xi64>, %t: tensor<2xf32>, %k: tensor<2xi32>, %p: tensor<2xf32>, %s: tensor<2xi64>, %st: tensor<2xi64>) {
  // expected-error @+1 {{'braid.sample_merge' op vocab must be positive, found -3}}
  %m = braid.sample_merge max %g, %t, %k, %p, %s, %st {top_k_cap = 0, vocab = -3} : (tensor<4x2xi64>, tensor<2xf32>, tensor<2xi32>, tensor<2xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<2x16xi64>
  return
}

// -----

func.func @merge_result(%g: tensor<4x2xi64>, %t: tensor<2xf32>, %k: tensor<2xi32>, %p: tensor<2xf32>, %s: tensor<2xi64>, %st: tensor<2xi64>) {
  // expected-error @+1 {{'braid.sample_merge' op result must be 'tensor<2x16xi64>', found 'tensor<2x13xi64>'}}
  %m = braid.sample_merge max %g, %t, %k, %p, %s, %st {top_k_cap = 0, vocab = 97} : (tensor<4x2xi64>, tensor<2xf32>, tensor<2xi32>, tensor<2xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<2x13xi64>
  return
}

// -----

func.func @ids_rank(%s: tensor<2x16xi64>) {
  // expected-error @+1 {{'braid.sample_ids' op ids must be [B], found 'tensor<2x1xi32>'}}
  %ids = braid.sample_ids %s : tensor<2x16xi64> -> tensor<2x1xi32>
  return
}

// -----

func.func @ids_state(%s: tensor<3x16xi64>) {
  // expected-error @+1 {{'braid.sample_ids' op state must be [2, 10 + 3 ranks] (i64), found 'tensor<3x16xi64>'}}
  %ids = braid.sample_ids %s : tensor<3x16xi64> -> tensor<2xi32>
  return
}
