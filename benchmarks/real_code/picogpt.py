"""picoGPT's GPT-2 forward pass (jaymody/picoGPT, ``gpt2.py``), rewritten in its style: params
as nested dicts unpacked with ``**``, ``np.split`` into heads, ``np.tri`` causal mask,
``np.hstack`` of head outputs, ``wte[inputs] + wpe[range(len(inputs))]``. float32 as the
checkpoint's weights. Sizes: n_ctx tokens of width 8 n (small) or 16 n (big)."""
import numpy as np

from .case import case, out_of_scope


def gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def softmax(x):
    exp_x = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return exp_x / np.sum(exp_x, axis=-1, keepdims=True)


def layer_norm(x, g, b, eps: float = 1e-5):
    mean = np.mean(x, axis=-1, keepdims=True)
    variance = np.var(x, axis=-1, keepdims=True)
    x = (x - mean) / np.sqrt(variance + eps)
    return g * x + b


def linear(x, w, b):
    return x @ w + b


def ffn(x, c_fc, c_proj):
    a = gelu(linear(x, **c_fc))
    x = linear(a, **c_proj)
    return x


def attention(q, k, v, mask):
    return softmax(q @ k.T / np.sqrt(q.shape[-1]) + mask) @ v


def mha(x, c_attn, c_proj, n_head):
    x = linear(x, **c_attn)
    qkv = np.split(x, 3, axis=-1)
    qkv_heads = list(map(lambda x: np.split(x, n_head, axis=-1), qkv))
    causal_mask = (1 - np.tri(x.shape[0], dtype=x.dtype)) * -1e10
    out_heads = [attention(q, k, v, causal_mask) for q, k, v in zip(*qkv_heads)]
    x = np.hstack(out_heads)
    x = linear(x, **c_proj)
    return x


def transformer_block(x, mlp, attn, ln_1, ln_2, n_head):
    x = x + mha(layer_norm(x, **ln_1), **attn, n_head=n_head)
    x = x + ffn(layer_norm(x, **ln_2), **mlp)
    return x


def gpt2(inputs, wte, wpe, blocks, ln_f, n_head):
    x = wte[inputs] + wpe[range(len(inputs))]
    for block in blocks:
        x = transformer_block(x, **block, n_head=n_head)
    x = layer_norm(x, **ln_f)
    return x @ wte.T


# --- parameters shaped as picoGPT's checkpoint loader builds them ---------------------------

def _w(rng, *shape):
    return (rng.standard_normal(shape) * 0.2).astype(np.float32)


def _lin(rng, i, o):
    return {"w": _w(rng, i, o), "b": _w(rng, o)}


def _ln(rng, d):
    return {"g": 1 + _w(rng, d), "b": _w(rng, d)}


def _block(rng, d):
    return {"mlp": {"c_fc": _lin(rng, d, 4 * d), "c_proj": _lin(rng, 4 * d, d)},
            "attn": {"c_attn": _lin(rng, d, 3 * d), "c_proj": _lin(rng, d, d)},
            "ln_1": _ln(rng, d), "ln_2": _ln(rng, d)}


def _x(rng, n):
    return _w(rng, 2 * n, 8 * n) * 5


@case("picogpt", lambda r, n: (_x(r, n),), small=1, big=64)
def picogpt_gelu(x):
    return gelu(x)


@case("picogpt", lambda r, n: (_x(r, n),), small=1, big=64)
def picogpt_softmax(x):
    return softmax(x)


@case("picogpt", lambda r, n: (_x(r, n), 1 + _w(r, 8 * n), _w(r, 8 * n)), small=1, big=64)
def picogpt_layer_norm(x, g, b):
    return layer_norm(x, g, b)


@case("picogpt", lambda r, n: (_x(r, n), _block(r, 8 * n)["mlp"]), small=1, big=16)
def picogpt_ffn(x, mlp):
    return ffn(x, **mlp)


@case("picogpt", lambda r, n: (_x(r, n), _x(r, n), _x(r, n)), small=1, big=32)
def picogpt_attention(q, k, v):
    causal_mask = (1 - np.tri(q.shape[0], dtype=q.dtype)) * -1e10
    return attention(q, k, v, causal_mask)


@case("picogpt", lambda r, n: (_x(r, n), _block(r, 8 * n)["attn"], 2), small=1, big=16,
      static=(2,))
def picogpt_mha(x, attn, n_head):
    return mha(x, **attn, n_head=n_head)


@case("picogpt", lambda r, n: (_x(r, n), _block(r, 8 * n), 2), small=1, big=16, static=(2,))
def picogpt_transformer_block(x, block, n_head):
    return transformer_block(x, **block, n_head=n_head)


@case("picogpt", lambda r, n: (r.integers(0, 50, 2 * n), _w(r, 50, 8 * n), _w(r, 16 * n, 8 * n),
                               [_block(r, 8 * n), _block(r, 8 * n)], _ln(r, 8 * n), 2),
      small=1, big=16, static=(5,))
def picogpt_gpt2(inputs, wte, wpe, blocks, ln_f, n_head):
    return gpt2(inputs, wte, wpe, blocks, ln_f, n_head)


out_of_scope("picogpt_generate", "picogpt",
             "`next_id = np.argmax(logits[-1]); inputs.append(int(next_id))`: the next "
             "step's input (and shape) is a value of the previous step")
