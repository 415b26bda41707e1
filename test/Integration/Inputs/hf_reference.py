"""Small Hugging Face checkpoints and their forward pass, in numpy (float64).

`checkpoint(kind)` draws a random model in the architecture's own naming and
layout (nn.Linear weights [out, in], GPT-2's fused Conv1D c_attn [in, 3H],
Mixtral's experts one tensor each, Mamba's fused in_proj and x_proj, its
conv1d weight [DI, 1, K]) with its config.json; `forward(config, tensors,
tokens)` computes the logits as transformers' modeling code of the
architecture does. Nothing here knows Braid's names or layouts: the test
checks that a model loaded through a weights map computes these logits.
"""
import numpy as np

V, H, F, HEADS, KV, HD, LAYERS = 96, 32, 48, 4, 2, 8, 2


def _llama_config(arch, **kw):
    c = {"architectures": [arch], "hidden_size": H, "intermediate_size": F,
         "num_attention_heads": HEADS, "num_key_value_heads": KV, "num_hidden_layers": LAYERS,
         "vocab_size": V, "max_position_embeddings": 64, "rms_norm_eps": 1e-5,
         "rope_theta": 10000.0, "hidden_act": "silu", "tie_word_embeddings": False}
    c.update(kw)
    return c


CONFIGS = {
    "llama": _llama_config("LlamaForCausalLM"),
    "qwen2": _llama_config("Qwen2ForCausalLM", tie_word_embeddings=True, rms_norm_eps=1e-6),
    "qwen3": _llama_config("Qwen3ForCausalLM", head_dim=16, tie_word_embeddings=True,
                           rms_norm_eps=1e-6),
    "mixtral": _llama_config("MixtralForCausalLM", num_local_experts=4, num_experts_per_tok=2),
    "qwen3_moe": _llama_config("Qwen3MoeForCausalLM", num_experts=4, num_experts_per_tok=2,
                               moe_intermediate_size=24, norm_topk_prob=True,
                               decoder_sparse_step=1, mlp_only_layers=[], head_dim=HD),
    "gpt2": {"architectures": ["GPT2LMHeadModel"], "n_embd": H, "n_head": HEADS,
             "n_layer": LAYERS, "vocab_size": V, "n_positions": 64,
             "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new"},
    "mamba": {"architectures": ["MambaForCausalLM"], "hidden_size": H, "state_size": 8,
              "num_hidden_layers": LAYERS, "vocab_size": V, "expand": 2, "conv_kernel": 4,
              "time_step_rank": 4, "use_bias": False, "use_conv_bias": True,
              "layer_norm_epsilon": 1e-5, "tie_word_embeddings": True},
}


class _Draw:
    def __init__(self, seed):
        self.rng, self.t = np.random.default_rng(seed), {}

    def w(self, name, *shape, std=0.15):
        self.t[name] = self.rng.normal(0.0, std, shape)

    def norm(self, name, n):
        self.t[name] = 1.0 + 0.1 * self.rng.normal(size=n)


def _llama_tensors(c, d):
    hd = c.get("head_dim", H // HEADS)
    d.w("model.embed_tokens.weight", V, H, std=0.5)
    d.norm("model.norm.weight", H)
    if not c["tie_word_embeddings"]:
        d.w("lm_head.weight", V, H)
    arch = c["architectures"][0]
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        d.norm(p + "input_layernorm.weight", H)
        d.norm(p + "post_attention_layernorm.weight", H)
        for n, rows in (("q", HEADS * hd), ("k", KV * hd), ("v", KV * hd)):
            d.w(p + f"self_attn.{n}_proj.weight", rows, H)
            if arch == "Qwen2ForCausalLM":
                d.w(p + f"self_attn.{n}_proj.bias", rows)
        d.w(p + "self_attn.o_proj.weight", H, HEADS * hd)
        if arch.startswith("Qwen3"):
            d.norm(p + "self_attn.q_norm.weight", hd)
            d.norm(p + "self_attn.k_norm.weight", hd)
        if arch == "MixtralForCausalLM":
            d.w(p + "block_sparse_moe.gate.weight", c["num_local_experts"], H, std=0.5)
            for e in range(c["num_local_experts"]):
                q = p + f"block_sparse_moe.experts.{e}."
                d.w(q + "w1.weight", F, H); d.w(q + "w3.weight", F, H); d.w(q + "w2.weight", H, F)
        elif arch == "Qwen3MoeForCausalLM":
            f = c["moe_intermediate_size"]
            d.w(p + "mlp.gate.weight", c["num_experts"], H, std=0.5)
            for e in range(c["num_experts"]):
                q = p + f"mlp.experts.{e}."
                d.w(q + "gate_proj.weight", f, H); d.w(q + "up_proj.weight", f, H)
                d.w(q + "down_proj.weight", H, f)
        else:
            d.w(p + "mlp.gate_proj.weight", F, H); d.w(p + "mlp.up_proj.weight", F, H)
            d.w(p + "mlp.down_proj.weight", H, F)


def _gpt2_tensors(c, d):
    # The prefix of GPT2LMHeadModel's state dict, and the causal-mask buffers
    # that checkpoints of older transformers hold: not weights.
    d.w("transformer.wte.weight", V, H, std=0.5)
    d.w("transformer.wpe.weight", c["n_positions"], H, std=0.1)
    d.norm("transformer.ln_f.weight", H); d.w("transformer.ln_f.bias", H)
    for i in range(LAYERS):
        p = f"transformer.h.{i}."
        d.norm(p + "ln_1.weight", H); d.w(p + "ln_1.bias", H)
        d.norm(p + "ln_2.weight", H); d.w(p + "ln_2.bias", H)
        d.w(p + "attn.c_attn.weight", H, 3 * H); d.w(p + "attn.c_attn.bias", 3 * H)
        d.w(p + "attn.c_proj.weight", H, H); d.w(p + "attn.c_proj.bias", H)
        d.w(p + "mlp.c_fc.weight", H, 4 * H); d.w(p + "mlp.c_fc.bias", 4 * H)
        d.w(p + "mlp.c_proj.weight", 4 * H, H); d.w(p + "mlp.c_proj.bias", H)
        d.t[p + "attn.bias"] = np.tril(np.ones((1, 1, 64, 64)))


def _mamba_tensors(c, d):
    di, n, r, k = c["expand"] * H, c["state_size"], c["time_step_rank"], c["conv_kernel"]
    d.w("backbone.embeddings.weight", V, H, std=0.5)
    d.norm("backbone.norm_f.weight", H)
    for i in range(LAYERS):
        p = f"backbone.layers.{i}."
        d.norm(p + "norm.weight", H)
        d.w(p + "mixer.in_proj.weight", 2 * di, H)
        d.w(p + "mixer.conv1d.weight", di, 1, k, std=0.3); d.w(p + "mixer.conv1d.bias", di)
        d.w(p + "mixer.x_proj.weight", r + 2 * n, di)
        d.w(p + "mixer.dt_proj.weight", di, r, std=0.3); d.w(p + "mixer.dt_proj.bias", di)
        d.t[p + "mixer.A_log"] = np.log(np.tile(np.arange(1, n + 1, dtype=np.float64), (di, 1)))
        d.norm(p + "mixer.D", di)
        d.w(p + "mixer.out_proj.weight", H, di)


def checkpoint(kind, seed=0):
    """(config, {name: float64 array}) of a random model of `kind`."""
    c = dict(CONFIGS[kind])
    d = _Draw(seed)
    {"gpt2": _gpt2_tensors, "mamba": _mamba_tensors}.get(kind, _llama_tensors)(c, d)
    return c, d.t


# --------------------------------------------------------------------------
# Forward passes, as transformers computes them
# --------------------------------------------------------------------------

def _rms(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def _layer_norm(x, w, b, eps):
    m = x.mean(-1, keepdims=True)
    return (x - m) / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + eps) * w + b


def _silu(x):
    return x / (1.0 + np.exp(-x))


def _rope(x, theta):
    """rotate_half RoPE of x [B, S, heads, D] at positions 0..S-1."""
    s, dim = x.shape[1], x.shape[-1]
    ang = np.arange(s)[:, None] * theta ** (-np.arange(0, dim, 2) / dim)[None]
    emb = np.concatenate([ang, ang], -1)
    rot = np.concatenate([-x[..., dim // 2:], x[..., :dim // 2]], -1)
    return x * np.cos(emb)[None, :, None] + rot * np.sin(emb)[None, :, None]


def _attend(q, k, v):
    """Causal attention of q [B,S,h,D] over k, v [B,S,kv,D] (GQA repeats)."""
    k = np.repeat(k, q.shape[2] // k.shape[2], 2)
    v = np.repeat(v, q.shape[2] // v.shape[2], 2)
    s = np.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(q.shape[-1])
    n = q.shape[1]
    s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = np.einsum("bhqk,bkhd->bqhd", p, v)
    return o.reshape(o.shape[0], o.shape[1], -1)


def _llama_attention(c, t, p, h):
    b, s, _ = h.shape
    hd = c.get("head_dim", H // HEADS)
    eps = c["rms_norm_eps"]

    def proj(n, heads):
        y = h @ t[p + f"{n}_proj.weight"].T + t.get(p + f"{n}_proj.bias", 0.0)
        y = y.reshape(b, s, heads, hd)
        # Qwen3 normalizes each head of q and k before RoPE.
        return _rms(y, t[p + f"{n}_norm.weight"], eps) if p + f"{n}_norm.weight" in t else y

    q, k, v = proj("q", HEADS), proj("k", KV), proj("v", KV)
    o = _attend(_rope(q, c["rope_theta"]), _rope(k, c["rope_theta"]), v)
    return o @ t[p + "o_proj.weight"].T


def _moe(h, router, experts, top_k, normalize):
    """Softmax router, top-k, optionally renormalized; experts(e, x)."""
    logits = h @ router.T
    prob = np.exp(logits - logits.max(-1, keepdims=True))
    prob /= prob.sum(-1, keepdims=True)
    out = np.zeros_like(h)
    for idx in np.ndindex(h.shape[:-1]):
        top = np.argsort(-prob[idx])[:top_k]
        w = prob[idx][top] / (prob[idx][top].sum() if normalize else 1.0)
        out[idx] = sum(wi * experts(e, h[idx]) for wi, e in zip(w, top))
    return out


def _llama_mlp(c, t, p, h):
    arch = c["architectures"][0]
    if arch == "MixtralForCausalLM":
        q = p + "block_sparse_moe."
        ex = lambda e, x: (_silu(x @ t[f"{q}experts.{e}.w1.weight"].T) *  # noqa: E731
                           (x @ t[f"{q}experts.{e}.w3.weight"].T)) @ t[f"{q}experts.{e}.w2.weight"].T
        return _moe(h, t[q + "gate.weight"], ex, c["num_experts_per_tok"], True)
    if arch == "Qwen3MoeForCausalLM":
        q = p + "mlp."
        ex = lambda e, x: (_silu(x @ t[f"{q}experts.{e}.gate_proj.weight"].T) *  # noqa: E731
                           (x @ t[f"{q}experts.{e}.up_proj.weight"].T)) @ \
            t[f"{q}experts.{e}.down_proj.weight"].T
        return _moe(h, t[q + "gate.weight"], ex, c["num_experts_per_tok"], c["norm_topk_prob"])
    g = h @ t[p + "mlp.gate_proj.weight"].T
    return (_silu(g) * (h @ t[p + "mlp.up_proj.weight"].T)) @ t[p + "mlp.down_proj.weight"].T


def _llama_forward(c, t, tokens):
    x, eps = t["model.embed_tokens.weight"][tokens], c["rms_norm_eps"]
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        x = x + _llama_attention(c, t, p + "self_attn.", _rms(x, t[p + "input_layernorm.weight"], eps))
        x = x + _llama_mlp(c, t, p, _rms(x, t[p + "post_attention_layernorm.weight"], eps))
    x = _rms(x, t["model.norm.weight"], eps)
    head = t["model.embed_tokens.weight"] if c["tie_word_embeddings"] else t["lm_head.weight"]
    return x @ head.T


def _gelu_new(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def _gpt2_forward(c, t, tokens):
    eps, (b, s) = c["layer_norm_epsilon"], tokens.shape
    x = t["transformer.wte.weight"][tokens] + t["transformer.wpe.weight"][:s][None]
    for i in range(c["n_layer"]):
        p = f"transformer.h.{i}."
        h = _layer_norm(x, t[p + "ln_1.weight"], t[p + "ln_1.bias"], eps)
        qkv = h @ t[p + "attn.c_attn.weight"] + t[p + "attn.c_attn.bias"]  # Conv1D: x @ W + b
        q, k, v = (y.reshape(b, s, HEADS, H // HEADS) for y in np.split(qkv, 3, -1))
        x = x + _attend(q, k, v) @ t[p + "attn.c_proj.weight"] + t[p + "attn.c_proj.bias"]
        h = _layer_norm(x, t[p + "ln_2.weight"], t[p + "ln_2.bias"], eps)
        h = _gelu_new(h @ t[p + "mlp.c_fc.weight"] + t[p + "mlp.c_fc.bias"])
        x = x + h @ t[p + "mlp.c_proj.weight"] + t[p + "mlp.c_proj.bias"]
    x = _layer_norm(x, t["transformer.ln_f.weight"], t["transformer.ln_f.bias"], eps)
    return x @ t["transformer.wte.weight"].T


def _mamba_mixer(c, t, p, h):
    """MambaMixer.slow_forward: in_proj, causal depthwise conv1d, SiLU, the
    selective scan with softplus(dt), y * SiLU(z), out_proj."""
    di, n, r, k = c["expand"] * H, c["state_size"], c["time_step_rank"], c["conv_kernel"]
    b, s, _ = h.shape
    xz = h @ t[p + "in_proj.weight"].T
    x, z = xz[..., :di], xz[..., di:]
    w = t[p + "conv1d.weight"][:, 0, :]  # [DI, K]
    padded = np.concatenate([np.zeros((b, k - 1, di)), x], 1)
    x = _silu(sum(padded[:, j:j + s] * w[:, j] for j in range(k)) + t[p + "conv1d.bias"])
    ssm = x @ t[p + "x_proj.weight"].T
    dt, bm, cm = ssm[..., :r], ssm[..., r:r + n], ssm[..., r + n:]
    dt = np.log1p(np.exp(dt @ t[p + "dt_proj.weight"].T + t[p + "dt_proj.bias"]))
    a = -np.exp(t[p + "A_log"])  # [DI, N]
    state, ys = np.zeros((b, di, n)), []
    for i in range(s):
        state = np.exp(a[None] * dt[:, i, :, None]) * state + \
            (dt[:, i, :, None] * bm[:, i, None, :]) * x[:, i, :, None]
        ys.append(state @ cm[:, i, :, None])
    y = np.concatenate(ys, -1).transpose(0, 2, 1) + x * t[p + "D"]
    return (y * _silu(z)) @ t[p + "out_proj.weight"].T


def _mamba_forward(c, t, tokens):
    eps = c["layer_norm_epsilon"]
    x = t["backbone.embeddings.weight"][tokens]
    for i in range(c["num_hidden_layers"]):
        p = f"backbone.layers.{i}."
        x = x + _mamba_mixer(c, t, p + "mixer.", _rms(x, t[p + "norm.weight"], eps))
    x = _rms(x, t["backbone.norm_f.weight"], eps)
    return x @ t["backbone.embeddings.weight"].T


def forward(config, tensors, tokens):
    """The logits [B, S, V] of `tokens` [B, S] (float64)."""
    arch = config["architectures"][0]
    fn = {"GPT2LMHeadModel": _gpt2_forward, "MambaForCausalLM": _mamba_forward}
    return fn.get(arch, _llama_forward)(config, tensors, np.asarray(tokens))


def greedy(config, tensors, prompt, n):
    """The n ids greedy decoding appends to `prompt`."""
    ids = list(prompt)
    for _ in range(n):
        ids.append(int(forward(config, tensors, np.array([ids]))[0, -1].argmax()))
    return ids[len(prompt):]


def cross_entropy(logits, labels):
    """The mean token loss of logits [B,S,V] against labels [B,S]."""
    z = logits - logits.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    return -np.take_along_axis(logp, labels[..., None], -1).mean()
