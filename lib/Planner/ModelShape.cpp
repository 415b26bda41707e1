//===- ModelShape.cpp - the sizes of a model, as the planner sees it ------===//

#include "braid/Planner/ModelShape.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

using namespace braid::plan;

namespace {
llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// The largest value the planner takes for a size: far past every
/// published model (Llama 3 405B: hidden 16,384, 126 layers, a vocabulary of
/// 128,256; contexts of millions of tokens), and small enough that the
/// products of its integer arithmetic (a GPT's ffn of 4 x hidden, padded
/// vocabularies) stay in range and its per-layer work stays quick.
int64_t limitOf(llvm::StringRef key) {
  return llvm::StringSwitch<int64_t>(key)
      .Cases({"vocab", "seq", "pad_vocab_multiple", "chunk"}, int64_t(1) << 24)
      .Cases({"hidden", "dt_rank"}, int64_t(1) << 20)
      .Cases({"ffn", "shared_ffn"}, int64_t(1) << 22)
      .Cases({"layers", "attn_period", "attn_offset", "expert_period", "expert_offset"},
             int64_t(1) << 14)
      .Case("d_conv", int64_t(1) << 10)
      .Case("expand", int64_t(1) << 8)
      .Default(int64_t(1) << 16); // heads, head_dim, experts, top_k, d_state, ...
}

/// Reads the keys of a model description, remembering the first bad one.
struct Reader {
  const llvm::StringMap<std::string> &attrs;
  std::string error;

  bool has(llvm::StringRef key) const { return attrs.count(key); }
  int64_t integer(llvm::StringRef key, int64_t fallback, bool required = false) {
    auto it = attrs.find(key);
    if (it == attrs.end()) {
      if (required && error.empty())
        error = "the model gives no '" + key.str() + "'";
      return fallback;
    }
    int64_t value;
    if (llvm::StringRef(it->second).trim().getAsInteger(10, value) || value < 0) {
      if (error.empty())
        error = "'" + key.str() + "' is not a non-negative integer: " + it->second;
      return fallback;
    }
    if (value > limitOf(key)) {
      if (error.empty())
        error = "'" + key.str() + "' is " + std::to_string(value) +
                ", beyond what the planner models (at most " + std::to_string(limitOf(key)) +
                ")";
      return fallback;
    }
    return value;
  }
  /// A positive, finite number up to `limit`.
  double real(llvm::StringRef key, double fallback, double limit) {
    auto it = attrs.find(key);
    if (it == attrs.end())
      return fallback;
    double value;
    if (llvm::StringRef(it->second).trim().getAsDouble(value) || !(value > 0) ||
        !(value <= limit)) {
      if (error.empty())
        error = "'" + key.str() + "' is not a number in (0, " + std::to_string(int64_t(limit)) +
                "]: " + it->second;
      return fallback;
    }
    return value;
  }
  bool flag(llvm::StringRef key, bool fallback) {
    auto it = attrs.find(key);
    if (it == attrs.end())
      return fallback;
    return llvm::StringRef(it->second).trim() == "true" ||
           llvm::StringRef(it->second).trim() == "1";
  }
  std::string text(llvm::StringRef key, llvm::StringRef fallback) {
    auto it = attrs.find(key);
    return it == attrs.end() ? fallback.str() : it->second;
  }
};

/// Which kinds of blocks a family's layers hold.
struct Blocks {
  bool attention, mamba, moe;
};

/// The sizes every family has, attention's, the MLP's and the model's
/// flags.
void readSizes(Reader &r, ModelShape &m, const Blocks &blocks) {
  m.vocab = r.integer("vocab", 0, true);
  // The builder pads the vocabulary (pad_vocab_multiple); the module's
  // `vocab` is then already the padded one, a description's may not be.
  if (int64_t pad = r.integer("pad_vocab_multiple", 1); pad > 1 && !r.has("vocab_unpadded"))
    m.vocab = (m.vocab + pad - 1) / pad * pad;
  m.hidden = r.integer("hidden", 0, true);
  m.layers = r.integer("layers", 0, true);
  m.seq = r.integer("seq", 0, true);
  if (blocks.attention) {
    m.heads = r.integer("heads", 0, true);
    m.kvHeads = r.integer("kv_heads", m.heads);
    m.headDim = r.integer("head_dim", m.heads ? m.hidden / std::max<int64_t>(1, m.heads) : 0);
  }
  m.gated = m.family != "gpt" && r.text("activation", "") != "squared-relu";
  m.biases = m.family == "gpt";
  m.layerNorm = m.family == "gpt" || r.text("norm", "") == "layer_norm";
  m.learnedPositions = m.family == "gpt";
  m.tiedEmbeddings = r.flag("tied_embeddings", m.family == "gpt" || m.family == "mamba");
  if (m.family != "mamba")
    m.ffn = r.integer("ffn", m.family == "gpt" ? 4 * m.hidden : 0, m.family != "gpt");
}

llvm::Error readExperts(Reader &r, ModelShape &m) {
  m.experts = r.integer("experts", 0, true);
  m.topK = r.integer("top_k", 0, true);
  // At most one slot per token per expert chosen: E drops nothing.
  m.capacityFactor = r.real("capacity_factor", 1.0, double(std::max<int64_t>(1, m.experts)));
  m.sharedFfn = r.integer("shared_ffn", 0);
  std::string routing = r.text("routing", "random");
  if (routing == "contiguous")
    m.routing = ModelShape::Routing::Contiguous;
  else if (routing != "random")
    return fail(m.name + ": unknown routing '" + routing + "' (known: random, contiguous)");
  return llvm::Error::success();
}

void readMamba(Reader &r, ModelShape &m) {
  m.dState = r.integer("d_state", 16);
  m.dConv = r.integer("d_conv", 4);
  m.expand = r.integer("expand", 2);
  m.dtRank = r.integer("dt_rank", (m.hidden + 15) / 16);
  m.mambaHeads = r.integer("mamba_heads", 0);
  m.mambaHeadDim = r.integer("mamba_head_dim", 64);
  m.nGroups = r.integer("n_groups", 1);
  m.chunk = r.integer("chunk", 128);
}

llvm::Error checkSizes(const ModelShape &m, const Blocks &blocks) {
  if (m.vocab < 1 || m.hidden < 1 || m.layers < 1 || m.seq < 1)
    return fail(m.name + ": vocab, hidden, layers and seq must be positive");
  if (blocks.attention &&
      (m.heads < 1 || m.kvHeads < 1 || m.heads % m.kvHeads || m.headDim < 1))
    return fail(m.name + ": heads and kv_heads must be positive, kv_heads dividing heads");
  if (blocks.moe && (m.experts < 1 || m.topK < 1 || m.topK > m.experts))
    return fail(m.name + ": experts and top_k must be positive, top_k <= experts");
  return llvm::Error::success();
}

/// A hybrid's layers given block by block: M Mamba, * attention, - MLP, E
/// experts.
llvm::Error layersFromPattern(ModelShape &m, llvm::StringRef pattern, bool moe) {
  if (m.family != "hybrid")
    return fail(m.name + ": a pattern of blocks is a hybrid model's");
  if (int64_t(pattern.size()) != m.layers)
    return fail(m.name + ": the pattern has " + std::to_string(pattern.size()) +
                " blocks, not layers = " + std::to_string(m.layers));
  if (m.mambaHeads && (m.mambaHeads < 1 || m.mambaHeadDim < 1 || m.nGroups < 1 ||
                       m.mambaHeads % m.nGroups || m.chunk < 1))
    return fail(m.name + ": Mamba-2 needs mamba_heads, mamba_head_dim, chunk >= 1 and "
                         "n_groups dividing mamba_heads");
  for (char c : pattern) {
    switch (c) {
    case 'M':
      m.layerShapes.push_back({m.mambaHeads ? Mixer::Mamba2 : Mixer::Mamba, Ffn::None});
      break;
    case '*':
      m.layerShapes.push_back({Mixer::Attention, Ffn::None});
      break;
    case '-':
      m.layerShapes.push_back({Mixer::None, Ffn::Dense});
      break;
    case 'E':
      if (!moe)
        return fail(m.name + ": the pattern's E blocks need experts and top_k");
      m.layerShapes.push_back({Mixer::None, Ffn::MoE});
      break;
    default:
      return fail(m.name + ": unknown block '" + std::string(1, c) +
                  "' in the pattern (M Mamba, * attention, - MLP, E experts)");
    }
  }
  return llvm::Error::success();
}

/// Where a hybrid without a pattern puts attention and experts: layer i
/// when i % period == offset.
struct Periods {
  int64_t attnPeriod, attnOffset, expertPeriod, expertOffset;
};

/// The layers of a family that repeats one block (a hybrid: by `periods`).
llvm::Error layersByPeriod(ModelShape &m, const Periods &periods, bool moe) {
  if (m.family == "hybrid" && periods.attnPeriod < 1)
    return fail(m.name + ": a hybrid model needs attn_period >= 1 (or a pattern)");
  for (int64_t i = 0; i < m.layers; ++i) {
    LayerShape shape;
    if (m.family == "mamba") {
      shape = {Mixer::Mamba, Ffn::None};
    } else if (m.family == "hybrid") {
      shape.mixer =
          i % periods.attnPeriod == periods.attnOffset ? Mixer::Attention : Mixer::Mamba;
      shape.ffn = moe && periods.expertPeriod && i % periods.expertPeriod == periods.expertOffset
                      ? Ffn::MoE
                      : Ffn::Dense;
    } else {
      shape = {Mixer::Attention, moe ? Ffn::MoE : Ffn::Dense};
    }
    m.layerShapes.push_back(shape);
  }
  return llvm::Error::success();
}
} // namespace

llvm::Expected<ModelShape>
ModelShape::fromAttributes(const llvm::StringMap<std::string> &attrs) {
  Reader r{attrs, {}};
  ModelShape m;
  m.family = r.text("family", "");
  m.name = r.text("name", m.family);
  if (m.family != "gpt" && m.family != "llama" && m.family != "mamba" &&
      m.family != "moe" && m.family != "hybrid")
    return fail("unknown model family '" + m.family +
                "' (known: gpt, llama, mamba, moe, hybrid)");
  Blocks blocks{/*attention=*/m.family != "mamba",
                /*mamba=*/m.family == "mamba" || m.family == "hybrid",
                /*moe=*/m.family == "moe" || (m.family == "hybrid" && r.has("experts"))};
  readSizes(r, m, blocks);
  if (blocks.moe)
    if (llvm::Error error = readExperts(r, m))
      return std::move(error);
  if (blocks.mamba)
    readMamba(r, m);
  std::string pattern = r.text("pattern", "");
  Periods periods;
  periods.attnPeriod = r.integer("attn_period", 0);
  periods.attnOffset = r.integer("attn_offset", 0);
  periods.expertPeriod = r.integer("expert_period", 0);
  periods.expertOffset = r.integer("expert_offset", 0);
  if (!r.error.empty())
    return fail(m.name + ": " + r.error);
  if (llvm::Error error = checkSizes(m, blocks))
    return std::move(error);
  if (llvm::Error error = pattern.empty() ? layersByPeriod(m, periods, blocks.moe)
                                          : layersFromPattern(m, pattern, blocks.moe))
    return std::move(error);
  return m;
}

llvm::Expected<ModelShape> ModelShape::fromString(llvm::StringRef text) {
  llvm::StringMap<std::string> attrs;
  llvm::SmallVector<llvm::StringRef> items;
  text.split(items, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef item : items) {
    auto [key, value] = item.split('=');
    if (value.empty())
      return fail("a model is given as key=value,...; '" + item + "' has no value");
    attrs[key.trim()] = value.trim().str();
  }
  return fromAttributes(attrs);
}

double ModelShape::layerExpertParameters(LayerShape shape) const {
  if (shape.ffn != Ffn::MoE)
    return 0;
  return (gated ? 3.0 : 2.0) * experts * hidden * ffn;
}

double ModelShape::ranksPerToken(int64_t ep) const {
  if (ep <= 1 || experts < 1 || topK < 1)
    return 1;
  // Expert e lives on rank e ep / E: consecutive experts, as evenly as E
  // divides (a plan's check requires ep to divide it).
  auto rankOf = [&](int64_t e) { return e * ep / experts; };
  if (routing == Routing::Random) {
    // Rank r, holding n_r experts, holds none of the k drawn without
    // replacement with probability C(E - n_r, k) / C(E, k).
    std::vector<int64_t> held(ep, 0);
    for (int64_t e = 0; e < experts; ++e)
      ++held[rankOf(e)];
    double ranks = 0;
    for (int64_t n : held) {
      double none = 1;
      for (int64_t i = 0; i < topK; ++i)
        none *= std::max(0.0, double(experts - n - i)) / double(experts - i);
      ranks += 1 - none;
    }
    return ranks;
  }
  // Contiguous: token i's run of k experts starts at i k mod E, so the
  // starts repeat every E / gcd(k, E) tokens; average over one period.
  const int64_t period = experts / std::gcd(topK, experts);
  std::vector<int64_t> seenBy(ep, -1);
  double ranks = 0;
  for (int64_t i = 0; i < period; ++i) {
    int64_t start = (i * topK) % experts;
    for (int64_t j = 0; j < std::min(topK, experts); ++j) {
      int64_t rank = rankOf((start + j) % experts);
      if (seenBy[rank] != i) {
        seenBy[rank] = i;
        ranks += 1;
      }
    }
  }
  return ranks / double(period);
}

double ModelShape::layerParameters(LayerShape shape) const {
  double h = hidden, norm = layerNorm ? 2 * h : h;
  double p = 0;
  if (shape.mixer == Mixer::Attention) {
    double q = heads * headDim, kv = kvHeads * headDim;
    p += norm + h * q + 2 * h * kv + q * h;
    if (biases)
      p += q + 2 * kv + h;
  } else if (shape.mixer == Mixer::Mamba) {
    double e = dInner(), n = dState, r = dtRank;
    p += norm + 2 * h * e + e * dConv + e + e * r + 2 * e * n + r * e + e + e * n + e + e * h;
  } else if (shape.mixer == Mixer::Mamba2) {
    // in_proj; the convolution (and its bias) over x, B and C; dt's bias,
    // A and D per head; the gated norm; out_proj.
    double e = dInner(), xbc = e + 2.0 * nGroups * dState;
    p += norm + h * mamba2Projection() + xbc * (dConv + 1) + 3.0 * mambaHeads + e + e * h;
  }
  switch (shape.ffn) {
  case Ffn::None:
    break;
  case Ffn::Dense:
    p += norm + (gated ? 3 : 2) * h * ffn;
    if (biases)
      p += ffn + h;
    break;
  case Ffn::MoE:
    p += norm + h * experts + layerExpertParameters(shape) +
         (gated ? 3 : 2) * h * double(sharedFfn);
    break;
  }
  return p;
}

double ModelShape::outerParameters() const {
  double h = hidden;
  double p = vocab * h + (layerNorm ? 2 * h : h);
  if (learnedPositions)
    p += seq * h;
  if (!tiedEmbeddings)
    p += h * vocab;
  return p;
}

double ModelShape::parameters() const {
  double p = outerParameters();
  for (LayerShape s : layerShapes)
    p += layerParameters(s);
  return p;
}

double ModelShape::activeParameters() const {
  double p = outerParameters();
  for (LayerShape s : layerShapes)
    p += layerParameters(s) -
         (experts ? layerExpertParameters(s) * (1.0 - double(topK) / experts) : 0);
  return p;
}

double ModelShape::forwardMatmulFlopsPerToken() const {
  double h = hidden, f = 0;
  for (LayerShape s : layerShapes) {
    if (s.mixer == Mixer::Attention) {
      double q = heads * headDim, kv = kvHeads * headDim;
      f += 2 * h * (q + 2 * kv) + 2 * q * h + 4.0 * seq * q;
    } else if (s.mixer == Mixer::Mamba) {
      double e = dInner();
      f += 2 * h * 2 * e + 2 * e * (dtRank + 2 * dState) + 2 * dtRank * e + 2 * e * h;
    } else if (s.mixer == Mixer::Mamba2) {
      f += 2 * h * mamba2Projection() + 2 * dInner() * h + mamba2ScanFlopsPerToken();
    }
    if (s.ffn == Ffn::Dense)
      f += 2 * (gated ? 3 : 2) * h * ffn;
    else if (s.ffn == Ffn::MoE) {
      // Capacity slots per token: E * ceil(cf * k * seq / E) / seq (one
      // capacity group per sequence, as the builder's default).
      double slots = experts * std::ceil(capacityFactor * topK * seq / experts) / seq;
      double mats = gated ? 3 : 2;
      f += 2 * h * experts + slots * 2 * mats * h * ffn + 2 * mats * h * sharedFfn;
    }
  }
  return f + 2 * h * vocab;
}
