"""The miniature model's data: token vocabulary and per-token KV / index-K rows derived from token ids.

Every row is a pure function of its token id, so a prefix cache can reuse rows and any damaged
byte is a real difference from what the model would have computed.

Rows:
- KV (C4 latent geometry, 584 B/token): bytes 0..3 hold the token id (the decode reads the ids of
  the tokens the indexer selected back out of the KV rows), the rest are hash bytes.
- index-K (128 values/token): small noise for ordinary tokens; a cue token (see below) has a
  large component on dim 0, one on the dim of its round and one on the dim of its session, so
  the decode query of session g, round r (e_0 + e_{1 + r % 64} + e_{65 + g % 63}) scores its
  own round-r cue block 7, its other cues 5, other sessions' cues 3 to 5, everything else ~0.
  Stored as bf16 (256 B/token, contiguous) or fp8 e4m3 + a float32 scale (128 + 4 B/token).
"""

from __future__ import annotations

import numpy as np

__all__ = ["KV_BYTES", "IDX_DIM", "idx_bytes", "CUE_BASE", "FINAL_BASE", "TURN_BASE", "CUE_PARTS",
           "cue_token", "decode_token", "turn_token", "kv_rows", "index_k_values", "quantize",
           "dequantize", "index_k_rows", "token_ids_of", "filler_tokens"]

KV_BYTES = 584          # c4_latent: 576 value + 8 scale bytes
IDX_DIM = 128
PAGE = 64
CUE_PARTS = 8           # one tool call = a block of 8 cue tokens (open, 6 params, close)
CUE_BASE = 1 << 24      # cue token: CUE_BASE + ((tag * 64 + round % 64) * 8 + part)
FINAL_BASE = 1 << 25    # same layout, but the block says "answer, no tool call"
TURN_BASE = 1 << 26     # TURN_BASE + tag * 64 + round: the last token of every prompt
ORDINARY = 1 << 20      # ordinary tokens are below this


def idx_bytes(dtype: str) -> int:
    return 256 if dtype == "bf16" else 132


def cue_token(tag: int, rnd: int, part: int, *, final: bool = False) -> int:
    base = FINAL_BASE if final else CUE_BASE
    return base + ((tag % 4096) * 64 + rnd % 64) * CUE_PARTS + part


def turn_token(rnd: int, tag: int = 0) -> int:
    return TURN_BASE + (tag % 4096) * 64 + rnd % 64


def decode_token(tok: int) -> tuple[str, int, int, int]:
    """(kind, tag, round%64, part) of a token; kind is cue, final, turn or word."""
    tok = int(tok)
    if tok >= TURN_BASE:
        v = tok - TURN_BASE
        return ("turn", v // 64, v % 64, 0)
    for kind, base in (("final", FINAL_BASE), ("cue", CUE_BASE)):
        if tok >= base:
            v = tok - base
            part = v % CUE_PARTS
            v //= CUE_PARTS
            return (kind, v // 64, v % 64, part)
    return ("word", 0, 0, tok)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser, vectorised (uint64 wraps)."""
    x = x.astype(np.uint64, copy=True)
    with np.errstate(over="ignore"):
        x += np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
    return x


def filler_tokens(key: int, n: int) -> np.ndarray:
    """n ordinary token ids, deterministic in key."""
    if n <= 0:
        return np.zeros(0, dtype=np.int64)
    h = _mix(np.arange(n, dtype=np.uint64) + np.uint64((key * 1_000_003) % (1 << 62)))
    return (h % np.uint64(ORDINARY)).astype(np.int64)


def _table(rows: int, width: int, salt: int) -> np.ndarray:
    h = _mix(np.arange(rows * width, dtype=np.uint64) + np.uint64(salt << 32))
    return h.reshape(rows, width)


_KV_TABLE = _table(4096, 73, 1).view(np.uint8).reshape(4096, 584)
_NOISE_TABLE = ((((_table(4096, IDX_DIM, 2) >> np.uint64(40)).astype(np.float64) / float(1 << 24))
                 - 0.5) * 0.2).astype(np.float32)


def _slot(t: np.ndarray) -> np.ndarray:
    return (_mix(t.astype(np.uint64)) % np.uint64(4096)).astype(np.int64)


def kv_rows(tokens: np.ndarray) -> np.ndarray:
    """[n, 584] uint8 KV rows: token id in bytes 0..3, hash bytes (a table row per id hash) after."""
    t = np.asarray(tokens, dtype=np.int64)
    n = t.shape[0]
    rows = _KV_TABLE[_slot(t)]
    rows[:, 0:4] = t.astype("<i4").view(np.uint8).reshape(n, 4)
    return rows


def token_ids_of(kv: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(kv[:, 0:4]).view("<i4").reshape(-1).astype(np.int64)


def index_k_values(tokens: np.ndarray) -> np.ndarray:
    """[n, 128] float32 index-K values of the tokens."""
    t = np.asarray(tokens, dtype=np.int64)
    vals = _NOISE_TABLE[_slot(t)]
    cue = (t >= CUE_BASE) & (t < TURN_BASE)
    if cue.any():
        c = t[cue] - np.where(t[cue] >= FINAL_BASE, FINAL_BASE, CUE_BASE)
        rnd = (c // CUE_PARTS) % 64
        tag = (c // CUE_PARTS) // 64
        rows = np.nonzero(cue)[0]
        vals[rows, 0] = 3.0
        vals[rows, 1 + rnd] = 2.0
        vals[rows, 65 + tag % 63] = 2.0
    return vals


# --- quantisation ------------------------------------------------------------------------

def _fp8_table() -> np.ndarray:
    """float32 value of each e4m3fn byte (NaN for 0x7f / 0xff)."""
    b = np.arange(256)
    sign = np.where(b & 0x80, -1.0, 1.0)
    exp = (b >> 3) & 0xF
    man = b & 0x7
    val = np.where(exp == 0, man / 8.0 * 2.0 ** -6, (1 + man / 8.0) * 2.0 ** (exp - 7.0))
    val = sign * val
    val[(b & 0x7F) == 0x7F] = np.nan
    return val.astype(np.float32)


_FP8 = _fp8_table()
_POS = np.arange(0, 0x7F)               # non-negative finite codes, increasing in value
_POS_VALS = _FP8[_POS]


def _fp8_encode(x: np.ndarray) -> np.ndarray:
    mag = np.minimum(np.abs(x), 448.0)
    i = np.clip(np.searchsorted(_POS_VALS, mag), 1, len(_POS_VALS) - 1)
    lo, hi = _POS_VALS[i - 1], _POS_VALS[i]
    code = np.where(mag - lo <= hi - mag, _POS[i - 1], _POS[i]).astype(np.uint8)
    return np.where(x < 0, code | 0x80, code).astype(np.uint8)


def quantize(vals: np.ndarray, dtype: str) -> np.ndarray:
    """[n, 128] float32 -> [n, idx_bytes(dtype)] uint8 (fp8: 128 values then a float32 scale)."""
    v = np.ascontiguousarray(vals, dtype=np.float32)
    n = v.shape[0]
    if dtype == "bf16":
        bits = v.view(np.uint32)
        rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
        return rounded.astype(np.uint16).view(np.uint8).reshape(n, 256)
    scale = np.maximum(np.abs(v).max(axis=1), 1e-12) / 448.0
    codes = _fp8_encode(v / scale[:, None])
    out = np.empty((n, 132), dtype=np.uint8)
    out[:, :128] = codes
    out[:, 128:] = scale.astype("<f4").view(np.uint8).reshape(n, 4)
    return out


def dequantize(rows: np.ndarray, dtype: str) -> np.ndarray:
    r = np.ascontiguousarray(rows, dtype=np.uint8)
    n = r.shape[0]
    if dtype == "bf16":
        u16 = r.view(np.uint16).reshape(n, 128).astype(np.uint32) << np.uint32(16)
        return u16.view(np.float32)
    scale = np.ascontiguousarray(r[:, 128:132]).view("<f4").reshape(n)
    return _FP8[r[:, :128]] * scale[:, None]


def index_k_rows(tokens: np.ndarray, dtype: str) -> np.ndarray:
    return quantize(index_k_values(tokens), dtype)
