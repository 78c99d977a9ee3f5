"""What the attention examples share (Blackwell ``attention.py``, Hopper ``hopper_attention.py``, Ampere
``ampere_attention.py``): the problem, its checks, the inputs and the float32 numpy reference with its tolerance.
Each kernel loads this module (``load_example_module``) rather than keeping a copy; it holds no kernels itself.

The problem: ``O = softmax(scale * Q @ K.T + mask) @ V`` per batch and query head, and the log-sum-exp a backward
pass needs, ``LSE = log(sum_j exp(scale * s_j))`` over a row's unmasked scores (natural log, float32).

* ``Q`` is ``(batch, heads, seq_q, head_dim)``, ``K`` and ``V`` are ``(batch, kv_heads, seq_kv, head_dim)``, ``O``
  is shaped like ``Q``, ``LSE`` is ``(batch, heads, seq_q)``. Grouped-query attention: query head ``h`` reads K/V
  head ``h // (heads // kv_heads)``.
* Causal masking is aligned at the bottom right, as FlashAttention 2.1 and later do: query ``i`` sees keys
  ``j <= i + seq_kv - seq_q``. With ``seq_q <= seq_kv`` every row sees at least one key; a causal problem with more
  queries than keys would have rows that see none, and is refused.

Tolerance, from the dtypes: the kernels round P to the 16-bit input dtype before ``P @ V`` (each term of a row's sum
is off by at most the dtype's unit roundoff ``u``: ``2^-8`` for bfloat16, ``2^-11`` for float16) and round O once
more on output; float32 sums and ``exp2`` add far less. So a row's error is at most ``u * max|V|`` absolute plus
``u`` relative; the check allows twice each. The log-sum-exp is float32 throughout and meets the same bound.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import ml_dtypes
import numpy as np

from tirx_layout.tools.kernel_report import Expected

#: The 16-bit input dtypes and their unit roundoff (half the distance from 1 to the next value).
UNIT_ROUNDOFF = {"bfloat16": 2.0**-8, "float16": 2.0**-11}
#: The head dimensions the kernels are written for.
HEAD_DIMS = (64, 128)
#: log2(e): the kernels compute ``exp(x) = exp2(x * log2(e))``, with the softmax scale folded into that factor.
LOG2E = 1.4426950408889634


class AttentionProblem(NamedTuple):
    """One attention forward: its sizes, dtype, masking and softmax scale (``None``: ``1 / sqrt(head_dim)``).

    Example:
        >>> p = AttentionProblem(batch=1, heads=4, kv_heads=2, seq_q=384, seq_kv=384, head_dim=128, causal=True)
        >>> p.group, round(p.softmax_scale, 6), p.q_shape, p.kv_shape
        (2, 0.088388, (1, 4, 384, 128), (1, 2, 384, 128))
    """

    batch: int
    heads: int
    kv_heads: int
    seq_q: int
    seq_kv: int
    head_dim: int
    dtype: str = "bfloat16"
    causal: bool = False
    scale: float | None = None

    @property
    def group(self) -> int:
        """Query heads per K/V head."""
        return self.heads // self.kv_heads

    @property
    def softmax_scale(self) -> float:
        """The factor applied to every score before the softmax."""
        return 1.0 / math.sqrt(self.head_dim) if self.scale is None else self.scale

    @property
    def q_shape(self) -> tuple[int, int, int, int]:
        """The shape of Q and O."""
        return (self.batch, self.heads, self.seq_q, self.head_dim)

    @property
    def kv_shape(self) -> tuple[int, int, int, int]:
        """The shape of K and V."""
        return (self.batch, self.kv_heads, self.seq_kv, self.head_dim)

    def check(self) -> AttentionProblem:
        """This problem, after a ``ValueError`` naming the first value no kernel here handles.

        Example:
            >>> AttentionProblem(1, 3, 2, 256, 256, 128).check()
            Traceback (most recent call last):
            ...
            ValueError: attention: 3 query heads do not divide into groups over 2 K/V heads
            >>> AttentionProblem(1, 2, 2, 512, 256, 64, causal=True).check()
            Traceback (most recent call last):
            ...
            ValueError: attention: causal masking aligned at the bottom right leaves query rows 0..255 of 512 with
            no key (seq_kv 256); give seq_q <= seq_kv
        """
        for name in ("batch", "heads", "kv_heads", "seq_q", "seq_kv"):
            if getattr(self, name) < 1:
                raise ValueError(f"attention: {name} must be at least 1, got {getattr(self, name)}")
        if self.heads % self.kv_heads:
            raise ValueError(
                f"attention: {self.heads} query heads do not divide into groups over {self.kv_heads} K/V heads"
            )
        if self.head_dim not in HEAD_DIMS:
            raise ValueError(f"attention: head_dim {self.head_dim} is not one of {HEAD_DIMS}")
        if self.dtype not in UNIT_ROUNDOFF:
            raise ValueError(f"attention: dtype {self.dtype!r} is not one of {tuple(UNIT_ROUNDOFF)}")
        if not self.softmax_scale > 0:
            raise ValueError(f"attention: the softmax scale must be positive, got {self.softmax_scale}")
        if self.causal and self.seq_q > self.seq_kv:
            unseen = self.seq_q - self.seq_kv
            raise ValueError(
                f"attention: causal masking aligned at the bottom right leaves query rows 0..{unseen - 1} of "
                f"{self.seq_q} with no key (seq_kv {self.seq_kv}); give seq_q <= seq_kv"
            )
        return self

    def visible_keys(self, query: int) -> int:
        """How many keys query row ``query`` sees (all of them unless causal).

        Example:
            >>> AttentionProblem(1, 1, 1, 4, 6, 64, causal=True).visible_keys(0)
            3
        """
        return min(self.seq_kv, query + self.seq_kv - self.seq_q + 1) if self.causal else self.seq_kv


def attention_inputs(problem: AttentionProblem, seed: int = 0) -> dict[str, np.ndarray]:
    """Q, K and V drawn from a standard normal distribution and rounded to the problem's dtype: scores of order one,
    so the softmax is neither one-hot nor flat (a sample of small integers would make it one-hot).

    Example:
        >>> x = attention_inputs(AttentionProblem(1, 2, 1, 8, 16, 64))
        >>> {name: (a.shape, str(a.dtype)) for name, a in x.items()}
        {'Q': ((1, 2, 8, 64), 'bfloat16'), 'K': ((1, 1, 16, 64), 'bfloat16'), 'V': ((1, 1, 16, 64), 'bfloat16')}
    """
    rng = np.random.default_rng(seed)
    dtype = getattr(ml_dtypes, problem.dtype) if problem.dtype == "bfloat16" else np.float16
    return {
        "Q": rng.standard_normal(problem.q_shape, np.float32).astype(dtype),
        "K": rng.standard_normal(problem.kv_shape, np.float32).astype(dtype),
        "V": rng.standard_normal(problem.kv_shape, np.float32).astype(dtype),
    }


def attention_reference(problem: AttentionProblem, q: np.ndarray, k: np.ndarray, v: np.ndarray) -> dict:
    """``{"O": ..., "LSE": ...}`` computed in float32 from the (already rounded) inputs; O is rounded to the dtype.

    Example:
        >>> p = AttentionProblem(1, 1, 1, 2, 2, 64, causal=True)
        >>> x = attention_inputs(p)
        >>> out = attention_reference(p, x["Q"], x["K"], x["V"])
        >>> bool(np.allclose(out["O"][0, 0, 0].astype(np.float32), x["V"][0, 0, 0].astype(np.float32)))
        True
    """
    q, k, v = (np.asarray(a, np.float32) for a in (q, k, v))
    k = np.repeat(k, problem.group, axis=1)  # query head h reads K/V head h // group
    v = np.repeat(v, problem.group, axis=1)
    scores = problem.softmax_scale * np.einsum("bhqd,bhkd->bhqk", q, k)
    if problem.causal:
        visible = np.arange(problem.seq_kv)[None, :] <= (
            np.arange(problem.seq_q)[:, None] + problem.seq_kv - problem.seq_q
        )
        scores = np.where(visible, scores, -np.inf)
    row_max = scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores - row_max)
    row_sum = weights.sum(axis=-1, keepdims=True)
    out = np.einsum("bhqk,bhkd->bhqd", weights / row_sum, v)
    dtype = ml_dtypes.bfloat16 if problem.dtype == "bfloat16" else np.float16
    lse = (row_max + np.log(row_sum))[..., 0]
    return {"O": out.astype(dtype), "LSE": lse.astype(np.float32)}


def attention_expected(problem: AttentionProblem, seed: int = 0) -> Expected:
    """The check of a kernel whose first three parameters are Q, K, V and whose outputs are O and LSE: the inputs of
    :func:`attention_inputs`, the reference, and the tolerance the module docstring derives.

    Example:
        >>> check = attention_expected(AttentionProblem(1, 2, 1, 8, 16, 64))
        >>> check.inputs, check.rtol, sorted(check.given)
        (3, 0.0078125, ['K', 'Q', 'V'])
    """
    problem.check()
    inputs = attention_inputs(problem, seed)
    u = UNIT_ROUNDOFF[problem.dtype]
    largest_value = float(np.abs(inputs["V"].astype(np.float32)).max())
    return Expected(
        lambda q, k, v: attention_reference(problem, q, k, v),
        inputs=3,
        rtol=2 * u,
        atol=2 * u * largest_value,
        given=inputs,
    )
