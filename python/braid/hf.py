"""Braid models of Hugging Face configurations (`config.json`).

    cfg = braid.from_hf("Qwen3-8B")            # a directory holding config.json
    cfg = braid.from_hf("gpt2/config.json", seq=512, batch=4)
    braid.compile(cfg, grid="dp=2,tp=2")
    python3 -m braid.models --hf Qwen3-8B --count-params

`from_hf` returns a `ModelConfig`, as `braid.preset` does, so everything that
takes a model takes it. Each architecture's reader maps the fields of its
configuration class in transformers onto Braid's families (see
docs/models.md for the table): every field is either mapped, checked to hold
a value Braid computes (e.g. `hidden_act` "silu"), listed as not changing
the function (token ids, dtypes, cache and kernel switches, initializer
ranges), or refused. A field whose value Braid does not compute raises
`UnsupportedConfigError` naming the field and the value; a field the reader
does not know raises it too, so that a configuration is never silently read
as another model. Training-only noise (dropout, router jitter) is not part
of the model's function: Braid trains without it and says so in a warning.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import warnings
from typing import Any, Callable, Mapping

from .config import ModelConfig
from .errors import ArgumentError, PathNotFoundError, did_you_mean

__all__ = ["from_hf", "config_from_hf", "read_hf_config", "UnsupportedConfigError",
           "ARCHITECTURES"]


class UnsupportedConfigError(ArgumentError):
    """A Hugging Face configuration Braid cannot build as written: a field
    whose value Braid does not compute, or a field it does not know.
    `.field` is the field's name (None for several unknown fields) and
    `.value` its value."""

    def __init__(self, message: str, field: str | None = None, value: Any = None):
        super().__init__(message)
        self.field, self.value = field, value


# The default training sequence when the configuration allows longer ones:
# Braid builds a step for one sequence length, and 4096 keeps the activations
# of the published models within one node (override with seq=...).
DEFAULT_SEQ = 4096

# Fields of every configuration that do not change the function: the
# checkpoint's storage type, special token ids, the cache and output
# switches of transformers' forward, provenance.
_NEUTRAL = ("architectures", "model_type", "torch_dtype", "dtype", "transformers_version",
            "_name_or_path", "use_cache", "bos_token_id", "eos_token_id", "pad_token_id",
            "output_attentions", "output_hidden_states", "return_dict", "use_return_dict",
            "tokenizer_class", "auto_map", "_attn_implementation")

# Fields whose only effect is noise during training (dropout, router jitter).
_TRAINING_NOISE = ("attention_dropout", "attn_pdrop", "resid_pdrop", "embd_pdrop",
                   "router_jitter_noise")


class _Fields:
    """The fields of one configuration, read once each: what is left at the
    end is unknown to the reader and refused."""

    def __init__(self, config: Mapping, arch: str, source: str):
        self.config, self.arch, self.source = dict(config), arch, source
        self.unread = set(self.config)

    def has(self, key: str) -> bool:
        return key in self.config

    def get(self, key: str, default: Any = None) -> Any:
        self.unread.discard(key)
        value = self.config.get(key, default)
        return default if value is None and default is not None else value

    def require(self, key: str, *aliases: str) -> Any:
        for k in (key,) + aliases:
            if self.config.get(k) is not None:
                for other in (key,) + aliases:
                    self.get(other)
                    if other != k and self.config.get(other) not in (None, self.config[k]):
                        self.refuse(other, f"it differs from {k} = {self.config[k]!r}")
                return self.config[k]
        raise UnsupportedConfigError(f"{self.source}: {self.arch} needs the field {key}",
                                     key, None)

    def integer(self, key: str, *aliases: str) -> int:
        value = self.require(key, *aliases)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            self.refuse(key, "a positive integer is expected")
        return value

    def refuse(self, key: str, why: str) -> None:
        value = self.config.get(key)
        raise UnsupportedConfigError(f"{self.source}: {self.arch} field {key} = {value!r} "
                                     f"is not supported: {why}", key, value)

    def expect(self, key: str, allowed: tuple, why: str, default: Any = None) -> Any:
        """The value of `key` (default when absent), refused unless in `allowed`."""
        value = self.get(key, default)
        if value not in allowed:
            self.refuse(key, why)
        return value

    def neutral(self, *keys: str) -> None:
        for key in keys:
            self.get(key)

    def finish(self, name: str) -> None:
        """Warn about training noise; refuse what no reader took."""
        noisy = [f"{k} = {self.config[k]!r}" for k in _TRAINING_NOISE
                 if k in self.unread and self.config[k]]
        self.neutral(*_TRAINING_NOISE, *_NEUTRAL)
        if noisy:
            warnings.warn(f"{self.source}: {name} trains without {', '.join(noisy)} "
                          "(training noise; the model's function is unchanged)", stacklevel=4)
        if self.unread:
            keys = sorted(self.unread)
            raise UnsupportedConfigError(
                f"{self.source}: {self.arch} field{'s' if len(keys) > 1 else ''} "
                f"{', '.join(keys)} unknown to Braid's reader of this architecture "
                "(a field is refused unless it is known not to change the function)",
                keys[0] if len(keys) == 1 else None,
                self.config[keys[0]] if len(keys) == 1 else None)


# --------------------------------------------------------------------------
# Shared pieces of the readers
# --------------------------------------------------------------------------

_SILU = ("silu", "swish")  # transformers' ACT2FN: both are nn.SiLU


def _seq(r: _Fields, key: str = "max_position_embeddings") -> int:
    limit = r.get(key)
    return min(limit, DEFAULT_SEQ) if isinstance(limit, int) and limit > 0 else DEFAULT_SEQ


def _rope(r: _Fields, default_theta: float) -> float:
    """rope_theta, refusing every RoPE variant but the plain one that
    braid.attention applies (no scaling, the whole head rotated)."""
    theta = r.get("rope_theta", default_theta)
    scaling = r.get("rope_scaling")
    if scaling is not None:
        kind = scaling.get("rope_type", scaling.get("type")) if isinstance(scaling, dict) else None
        if kind != "default":
            r.refuse("rope_scaling", "braid.attention has no RoPE scaling (it rotates by "
                     "theta^(-2i/D) unscaled); the op needs a scaled-frequency variant")
    # transformers 5 writes rope_theta and the scaling into one dictionary.
    params = r.get("rope_parameters")
    if params is not None:
        if not isinstance(params, dict) or params.get("rope_type", "default") != "default" \
                or set(params) - {"rope_type", "rope_theta"}:
            r.refuse("rope_parameters", "braid.attention has no RoPE scaling")
        theta = params.get("rope_theta", theta)
    if r.get("partial_rotary_factor", 1.0) != 1.0:
        r.refuse("partial_rotary_factor", "braid.attention rotates the whole head")
    return float(theta)


def _no_window(r: _Fields, uses_flag: bool) -> None:
    """Sliding-window attention: refused where it applies (braid.attention's
    mask is causal, unwindowed). With `uses_flag` (Qwen), the window applies
    only when use_sliding_window is true, and per layer by layer_types."""
    why = ("braid.attention has no windowed causal mask; the op needs a window "
           "(keys t with s - window < t <= s)")
    if uses_flag:
        if r.get("use_sliding_window", False):
            r.refuse("use_sliding_window", why + f" (sliding_window = "
                     f"{r.config.get('sliding_window')!r}, max_window_layers = "
                     f"{r.config.get('max_window_layers')!r})")
        r.neutral("sliding_window", "max_window_layers")
    elif r.get("sliding_window") is not None:
        r.refuse("sliding_window", why)
    types = r.get("layer_types")
    if types is not None and any(t != "full_attention" for t in types):
        r.refuse("layer_types", why)


def _attention(r: _Fields, hidden: int, default_theta: float | None) -> dict:
    heads = r.integer("num_attention_heads")
    kv = r.get("num_key_value_heads") or heads
    head_dim = r.get("head_dim") or hidden // heads
    out = dict(heads=heads, kv_heads=kv, head_dim=head_dim)
    if default_theta is not None:
        out["rope_theta"] = _rope(r, default_theta)
    return out


def _gated_mlp(r: _Fields, has_mlp_bias: bool) -> None:
    r.expect("hidden_act", _SILU, "Braid's gated MLP of these families is SwiGLU "
             "(silu(gate) * up)", default="silu")
    if has_mlp_bias and r.get("mlp_bias", False):
        r.refuse("mlp_bias", "the gated MLP has no biases in Braid")


def _dropless(experts: int, top_k: int) -> float:
    """The capacity factor that drops no token (capacity = the group's
    tokens, since a token picks an expert at most once): transformers' MoE
    blocks are dropless."""
    factor = experts / top_k
    return factor if factor * top_k == experts else float(math.ceil(factor))


def _router_loss(r: _Fields) -> None:
    if r.get("output_router_logits", False) and r.get("router_aux_loss_coef", 0.001):
        r.refuse("output_router_logits", "transformers then adds router_aux_loss_coef x the "
                 "load-balancing loss to the training loss; Braid's loss is the cross "
                 "entropy alone")
    r.neutral("router_aux_loss_coef")


def _common(r: _Fields, tied_default: bool) -> dict:
    return dict(vocab=r.integer("vocab_size"),
                tied_embeddings=bool(r.get("tie_word_embeddings", tied_default)),
                init_std=float(r.get("initializer_range", 0.02)))


# --------------------------------------------------------------------------
# The readers, one per architecture
# --------------------------------------------------------------------------

def _llama_like(r: _Fields, *, default_theta: float, qkv_bias: bool, qk_norm: bool,
                windowed_by_flag: bool, has_attention_bias: bool = False,
                has_mlp_bias: bool = False) -> dict:
    """Llama, Mistral, Qwen2, Qwen3: the `llama` family with options. Only the
    classes that define attention_bias / mlp_bias read them (elsewhere the
    field is unknown, so refused)."""
    hidden = r.integer("hidden_size")
    kw = dict(family="llama", hidden=hidden, layers=r.integer("num_hidden_layers"),
              ffn=r.integer("intermediate_size"), norm_eps=float(r.get("rms_norm_eps", 1e-6)),
              seq=_seq(r), scale_residual_init=False, **_common(r, False),
              **_attention(r, hidden, default_theta))
    _gated_mlp(r, has_mlp_bias)
    _no_window(r, windowed_by_flag)
    if has_attention_bias and r.get("attention_bias", False):
        kw.update(qkv_bias=True, o_bias=True)
    if qkv_bias:
        kw["qkv_bias"] = True
    kw["qk_norm"] = qk_norm
    # Splitting the projections in pretraining_tp slices computes the same sums.
    r.neutral("pretraining_tp")
    return kw


def _llama(r):
    return _llama_like(r, default_theta=1e4, qkv_bias=False, qk_norm=False,
                       windowed_by_flag=False, has_attention_bias=True, has_mlp_bias=True)


def _mistral(r):
    return _llama_like(r, default_theta=1e4, qkv_bias=False, qk_norm=False,
                       windowed_by_flag=False)


def _qwen2(r):
    # Qwen2's q/k/v projections always have biases, its o_proj none.
    return _llama_like(r, default_theta=1e4, qkv_bias=True, qk_norm=False,
                       windowed_by_flag=True)


def _qwen3(r):
    return _llama_like(r, default_theta=1e4, qkv_bias=False, qk_norm=True,
                       windowed_by_flag=True, has_attention_bias=True)


def _mixtral(r):
    kw = _llama_like(r, default_theta=1e6, qkv_bias=False, qk_norm=False,
                     windowed_by_flag=False)
    experts, top_k = r.integer("num_local_experts"), r.integer("num_experts_per_tok")
    _router_loss(r)
    # Mixtral renormalizes the top-k softmax weights to sum to 1.
    kw.update(family="moe", experts=experts, top_k=top_k, router_normalize=True,
              capacity_factor=_dropless(experts, top_k))
    return kw


def _qwen_moe(r, *, shared: bool, qk_norm: bool):
    # Qwen2-MoE's q/k/v biases are on unless a configuration says qkv_bias
    # false; Qwen3-MoE's attention is Qwen3's (attention_bias, q/k norms).
    kw = _llama_like(r, default_theta=1e4, qkv_bias=not qk_norm and r.get("qkv_bias", True),
                     qk_norm=qk_norm, windowed_by_flag=True, has_attention_bias=qk_norm)
    # transformers 5 writes the expert count under Mixtral's name
    # (Qwen3MoeConfig.attribute_map: num_experts -> num_local_experts).
    experts = r.integer("num_experts", "num_local_experts")
    top_k = r.integer("num_experts_per_tok")
    layers = kw["layers"]
    step = r.get("decoder_sparse_step", 1)
    only = r.get("mlp_only_layers") or []
    dense = [i for i in range(layers) if i in only or (i + 1) % step]
    if dense:
        r.refuse("mlp_only_layers" if only else "decoder_sparse_step",
                 f"layers {dense} would be dense among MoE layers: Braid's moe family "
                 "puts experts in every layer")
    # intermediate_size is the dense layers' width: with none, it is unused.
    kw["ffn"] = r.integer("moe_intermediate_size")
    if shared and r.get("shared_expert_intermediate_size", 0):
        r.refuse("shared_expert_intermediate_size",
                 "the shared expert's output is scaled per token by sigmoid(x . w_gate) "
                 "(shared_expert_gate): Braid has no op that broadcasts a [T,1] gate over "
                 "[T,H], nor a shared expert in its MoE ops")
    _router_loss(r)
    kw.update(family="moe", experts=experts, top_k=top_k,
              router_normalize=bool(r.get("norm_topk_prob", False)),
              capacity_factor=_dropless(experts, top_k))
    return kw


def _qwen2_moe(r):
    return _qwen_moe(r, shared=True, qk_norm=False)


def _qwen3_moe(r):
    return _qwen_moe(r, shared=False, qk_norm=True)


def _gpt2(r):
    hidden = r.integer("n_embd", "hidden_size")
    positions = r.integer("n_positions", "max_position_embeddings")
    r.neutral("n_ctx")  # the legacy name of n_positions, unused by the model
    heads = r.integer("n_head", "num_attention_heads")
    r.expect("activation_function", ("gelu_new", "gelu_pytorch_tanh"),
             "Braid's GPT MLP is GELU with the tanh approximation", default="gelu_new")
    r.expect("scale_attn_weights", (True,), "braid.attention scales scores by 1/sqrt(D)",
             default=True)
    r.expect("scale_attn_by_inverse_layer_idx", (False,),
             "braid.attention's scale is one for all layers", default=False)
    r.expect("add_cross_attention", (False,), "a decoder-only model has no cross attention",
             default=False)
    # Upcasting the attention scores to f32 changes rounding, not the function;
    # the summary_* fields are GPT2DoubleHeadsModel's head, task_specific_params
    # generation defaults.
    r.neutral("reorder_and_upcast_attn", "summary_type", "summary_use_proj",
              "summary_activation", "summary_proj_to_labels", "summary_first_dropout",
              "task_specific_params")
    return dict(family="gpt", hidden=hidden, layers=r.integer("n_layer", "num_hidden_layers"),
                heads=heads, ffn=r.get("n_inner") or 4 * hidden, max_positions=positions,
                seq=min(positions, DEFAULT_SEQ), norm_eps=float(r.get("layer_norm_epsilon", 1e-5)),
                scale_residual_init=True, **_common(r, True))


def _mamba_mixer(r: _Fields, hidden: int, expand_key: str, dt_key: str) -> dict:
    expand = r.get(expand_key, 2)
    if isinstance(expand, float) and expand.is_integer():
        expand = int(expand)
    if not isinstance(expand, int) or isinstance(expand, bool) or expand < 1:
        r.refuse(expand_key, "Braid's d_inner is an integer multiple of hidden")
    dt_rank = r.get(dt_key, "auto")
    return dict(expand=expand,
                dt_rank=math.ceil(hidden / 16) if dt_rank == "auto" else dt_rank)


def _mamba(r):
    hidden = r.integer("hidden_size", "d_model")
    kw = dict(family="mamba", hidden=hidden, layers=r.integer("num_hidden_layers", "n_layer"),
              seq=2048, norm_eps=float(r.get("layer_norm_epsilon", 1e-5)),
              d_state=r.get("state_size", 16), d_conv=r.get("conv_kernel", 4),
              mamba_conv_bias=bool(r.get("use_conv_bias", True)),
              mamba_proj_bias=bool(r.get("use_bias", False)),
              **_mamba_mixer(r, hidden, "expand", "time_step_rank"), **_common(r, True))
    inner = r.get("intermediate_size")
    if inner is not None and inner != kw["expand"] * hidden:
        r.refuse("intermediate_size", f"it must be expand x hidden_size = "
                 f"{kw['expand'] * hidden}")
    r.expect("hidden_act", _SILU, "the Mamba mixer's activation is SiLU", default="silu")
    r.expect("rms_norm", (True,), "Mamba's norms are RMSNorm in transformers' "
             "MambaForCausalLM", default=True)
    # Initialization (time_step_*, rescale_prenorm_residual), the residual's
    # precision and kernel choices; d_model, n_layer, rms_norm, fused_add_norm,
    # ssm_cfg and pad_vocab_size_multiple are mamba_ssm's names, which
    # transformers' MambaForCausalLM does not read (vocab_size is already padded).
    r.neutral("time_step_scale", "time_step_min", "time_step_max", "time_step_init_scheme",
              "time_step_floor", "rescale_prenorm_residual", "residual_in_fp32",
              "use_mambapy", "use_associative_scan", "fused_add_norm", "ssm_cfg",
              "pad_vocab_size_multiple")
    return kw


def _jamba(r):
    hidden = r.integer("hidden_size")
    experts, top_k = r.integer("num_experts"), r.integer("num_experts_per_tok")
    if experts < 2:
        r.refuse("num_experts", "with one expert Jamba's layers are all dense; Braid's "
                 "hybrid family places MoE layers by expert_layer_period")
    kw = dict(family="hybrid", hidden=hidden, layers=r.integer("num_hidden_layers"),
              ffn=r.integer("intermediate_size"), norm_eps=float(r.get("rms_norm_eps", 1e-6)),
              seq=_seq(r), scale_residual_init=False,
              # Jamba's attention has no positional encoding.
              **_attention(r, hidden, None),
              attn_period=r.integer("attn_layer_period"),
              attn_offset=r.get("attn_layer_offset", 4),
              expert_period=r.integer("expert_layer_period"),
              expert_offset=r.get("expert_layer_offset", 1),
              # Jamba's router keeps the raw top-k softmax probabilities.
              experts=experts, top_k=top_k, router_normalize=False,
              capacity_factor=_dropless(experts, top_k),
              d_state=r.get("mamba_d_state", 16), d_conv=r.get("mamba_d_conv", 4),
              mamba_conv_bias=bool(r.get("mamba_conv_bias", True)),
              mamba_proj_bias=bool(r.get("mamba_proj_bias", False)),
              mamba_inner_norms=True,
              **_mamba_mixer(r, hidden, "mamba_expand", "mamba_dt_rank"), **_common(r, False))
    r.expect("hidden_act", _SILU, "Jamba's MLP and mixer activation is SiLU in Braid",
             default="silu")
    _no_window(r, False)
    _router_loss(r)
    # Kernel choices of the Mamba mixer (as in _mamba), not the function.
    r.neutral("use_mamba_kernels", "num_logits_to_keep", "use_mambapy", "use_associative_scan")
    return kw


# architecture -> (model_type, reader)
ARCHITECTURES: dict[str, tuple[str, Callable]] = {
    "LlamaForCausalLM": ("llama", _llama),
    "MistralForCausalLM": ("mistral", _mistral),
    "Qwen2ForCausalLM": ("qwen2", _qwen2),
    "Qwen3ForCausalLM": ("qwen3", _qwen3),
    "GPT2LMHeadModel": ("gpt2", _gpt2),
    "MixtralForCausalLM": ("mixtral", _mixtral),
    "Qwen2MoeForCausalLM": ("qwen2_moe", _qwen2_moe),
    "Qwen3MoeForCausalLM": ("qwen3_moe", _qwen3_moe),
    "MambaForCausalLM": ("mamba", _mamba),
    "JambaForCausalLM": ("jamba", _jamba),
}
_BY_MODEL_TYPE = {t: a for a, (t, _) in ARCHITECTURES.items()}


def _architecture(config: Mapping, source: str) -> str:
    archs = config.get("architectures")
    if archs:
        if not isinstance(archs, list) or len(archs) != 1:
            raise UnsupportedConfigError(f"{source}: architectures = {archs!r}: Braid builds "
                                         "one architecture", "architectures", archs)
        arch = archs[0]
    elif config.get("model_type") in _BY_MODEL_TYPE:
        arch = _BY_MODEL_TYPE[config["model_type"]]
    else:
        raise UnsupportedConfigError(f"{source}: the configuration names no architecture "
                                     f"(architectures, model_type)", "architectures", archs)
    if arch not in ARCHITECTURES:
        raise UnsupportedConfigError(
            f"{source}: architectures = {archs!r}: {arch} is not supported (supported: "
            f"{', '.join(ARCHITECTURES)})", "architectures", archs)
    return arch


def config_from_hf(config: Mapping, /, name: str | None = None, source: str = "config.json",
                   **overrides) -> ModelConfig:
    """The ModelConfig of a Hugging Face configuration given as a dict (the
    contents of config.json); `overrides` are ModelConfig fields (seq=...,
    batch=..., dtype=...). Raises UnsupportedConfigError for a field Braid
    cannot build as written."""
    if not isinstance(config, Mapping):
        raise ArgumentError(f"{source}: a configuration is a JSON object, found "
                            f"{type(config).__name__}")
    arch = _architecture(config, source)
    r = _Fields(config, arch, source)
    kw = ARCHITECTURES[arch][1](r)
    name = name or config.get("_name_or_path") or arch
    r.finish(name)
    fields = {f.name for f in dataclasses.fields(ModelConfig)}
    unknown = sorted(set(overrides) - fields)
    if unknown:
        raise ArgumentError(f"from_hf: unknown override {unknown[0]!r}"
                            f"{did_you_mean(unknown[0], fields)}")
    cfg = ModelConfig(name=str(name), description=f"{arch} from {source}", **kw)
    cfg = dataclasses.replace(cfg, **overrides)
    cfg.resolved()  # refuse an inconsistent configuration now, naming it
    return cfg


def read_hf_config(path: str | os.PathLike) -> tuple[dict, str, str]:
    """(config.json's contents, its path, the model's name) of a directory
    holding config.json or of the file itself."""
    path = os.fspath(path)
    file = os.path.join(path, "config.json") if os.path.isdir(path) else path
    if not os.path.isfile(file):
        raise PathNotFoundError(f"{file}: no such file (from_hf takes a directory holding "
                                "config.json, or the config.json file)", file)
    try:
        with open(file, encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, ValueError) as e:
        raise ArgumentError(f"{file}: not a JSON configuration: {e}") from None
    folder = os.path.basename(os.path.dirname(os.path.abspath(file)))
    return config, file, folder


def from_hf(path: str | os.PathLike, /, **overrides) -> ModelConfig:
    """The ModelConfig of the Hugging Face model at `path` (a directory
    holding config.json, or the file), named after its directory; keyword
    arguments override ModelConfig fields (seq, batch, dtype, layers, ...).
    The result is what `braid.preset` returns: braid.compile, run and
    generate take it. Raises UnsupportedConfigError (a braid.ArgumentError)
    naming a field Braid cannot build."""
    config, file, folder = read_hf_config(path)
    return config_from_hf(config, folder or None, source=file, **overrides)
