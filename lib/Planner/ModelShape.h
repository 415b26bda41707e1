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

enum class Mixer { Attention, Mamba };
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
  // Mamba
  int64_t dState = 16, dConv = 4, expand = 2, dtRank = 0;
  /// The kind of each layer, in order.
  std::vector<LayerShape> layerShapes;

  /// From the keys of `braid.model` (strings as the IR prints them: "4096",
  /// "true", "llama"). Fails naming what is missing or inconsistent.
  static llvm::Expected<ModelShape>
  fromAttributes(const llvm::StringMap<std::string> &attrs);
  /// From "key=value,key=value" (the same keys).
  static llvm::Expected<ModelShape> fromString(llvm::StringRef text);

  int64_t dInner() const { return expand * hidden; }
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
