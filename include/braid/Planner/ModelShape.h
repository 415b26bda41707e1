//===- ModelShape.h - the sizes of a model, as the planner sees it -*- C++ -*-===//
//
// The hyper-parameters of a model (the `braid.model` dictionary the builder
// writes on every module, or the same keys given as key=value pairs), and
// what follows from them per layer: parameters, the matrix products with
// their shapes, the attention and scan work, the bytes of memory-bound
// kernels and of saved activations. The formulas follow the ops the model
// builder (python/braid/families.py) emits for each family, so that the
// planner's parameter and FLOP counts equal the IR's (test/Planner checks
// them against --braid-model-stats).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_LIB_PLANNER_MODELSHAPE_H
#define BRAID_LIB_PLANNER_MODELSHAPE_H

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace braid::plan {

/// A layer's sequence mixer: attention, Mamba (the selective scan of Gu and
/// Dao 2023, the builder's), Mamba-2 (the state space duality of Dao and
/// Gu 2024: chunked, its products on tensor cores), or none (a block of a
/// hybrid pattern that is only an MLP or only experts).
enum class Mixer { None, Attention, Mamba, Mamba2 };
enum class Ffn { None, Dense, MoE };

struct LayerShape {
  Mixer mixer = Mixer::Attention;
  Ffn ffn = Ffn::Dense;
  bool operator==(const LayerShape &o) const { return mixer == o.mixer && ffn == o.ffn; }
};

struct ModelShape {
  std::string name, family;
  int64_t vocab = 0, hidden = 0, layers = 0, seq = 0;
  // attention
  int64_t heads = 0, kvHeads = 0, headDim = 0;
  // dense and expert MLPs
  int64_t ffn = 0;
  bool gated = true;    ///< SwiGLU (three matrices) rather than GPT's two
  bool biases = false;  ///< GPT's projection and norm biases
  bool learnedPositions = false;
  bool tiedEmbeddings = false;
  bool layerNorm = false; ///< LayerNorm (gain and bias) rather than RMSNorm
  // mixture of experts
  int64_t experts = 0, topK = 0;
  double capacityFactor = 1.0;
  /// An expert every token passes through besides its top k (its MLP's
  /// width; 0: none).
  int64_t sharedFfn = 0;
  /// How tokens choose their k experts, which decides how many ranks of an
  /// ep split a token's choices reach (what a dispatcher that sends a token
  /// once per rank moves): `random`, k distinct experts drawn uniformly (a
  /// balanced learned router; Megatron's --moe-router-force-load-balancing
  /// draws random logits), or `contiguous`, token i taking experts i k to
  /// i k + k - 1 modulo E (NeMo AutoModel's FakeBalancedGate, which its
  /// MoE benchmarks run).
  enum class Routing { Random, Contiguous };
  Routing routing = Routing::Random;
  // Mamba
  int64_t dState = 16, dConv = 4, expand = 2, dtRank = 0;
  // Mamba-2: heads of head_dim channels (d_inner their product), groups of
  // B and C shared by heads, the chunk length of the state space duality.
  int64_t mambaHeads = 0, mambaHeadDim = 64, nGroups = 1, chunk = 128;
  /// The kind of each layer, in order.
  std::vector<LayerShape> layerShapes;

  /// From the keys of `braid.model` (strings as the IR prints them: "4096",
  /// "true", "llama"). Fails naming what is missing or inconsistent. A
  /// hybrid model may give its blocks as a `pattern` instead of periods, one
  /// character a block as Megatron-LM's hybrid models do: M a Mamba mixer
  /// (Mamba-2 with `mamba_heads`), * attention, - an MLP, E experts.
  static llvm::Expected<ModelShape>
  fromAttributes(const llvm::StringMap<std::string> &attrs);
  /// From "key=value,key=value" (the same keys).
  static llvm::Expected<ModelShape> fromString(llvm::StringRef text);

  int64_t dInner() const { return mambaHeads ? mambaHeads * mambaHeadDim : expand * hidden; }
  /// Mamba-2's input projection: z and x (d_inner each), B and C (a state
  /// per group each), dt (one per head).
  int64_t mamba2Projection() const { return 2 * dInner() + 2 * nGroups * dState + mambaHeads; }
  /// The products of Mamba-2's chunked scan per token, forward (Dao and Gu
  /// 2024, the SSD algorithm): within a chunk C B^T (groups) and its mask
  /// times x (heads), between chunks the states B^T x and C times them.
  double mamba2ScanFlopsPerToken() const {
    double q = chunk, n = dState, hp = mambaHeadDim;
    return 2 * q * n * nGroups + mambaHeads * (2 * q * hp + 4 * n * hp);
  }
  /// The expected number of ranks, of ep holding consecutive experts (E / ep
  /// each), that hold at least one of a token's k experts (1 without ep).
  double ranksPerToken(int64_t ep) const;
  /// Parameters of one layer of `shape`, and of those the experts' (which
  /// an ep axis shards).
  double layerParameters(LayerShape shape) const;
  double layerExpertParameters(LayerShape shape) const;
  /// Embedding, positions, final norm and output head.
  double outerParameters() const;
  double parameters() const;
  /// Parameters a token passes through (k of E experts).
  double activeParameters() const;
  /// Matrix-product FLOPs of a forward pass per token, the attention's
  /// causal score and value products included (as --braid-model-stats
  /// counts them: the whole square, 4 * seq * heads * head_dim per layer).
  double forwardMatmulFlopsPerToken() const;
};

} // namespace braid::plan

#endif // BRAID_LIB_PLANNER_MODELSHAPE_H
