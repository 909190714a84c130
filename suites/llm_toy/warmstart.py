"""The warm start: supervised fine-tuning on demonstrations (the SFT policy, which is also
the reference policy), and for preference tasks the reward model, trained by
Bradley-Terry loss on preference pairs labelled by the hidden gold score with noise.

Both are cached on disk by a hash of everything they depend on, so a sweep trains them
once: ``$PG_ARENA_CACHE/llm_toy`` (default ``~/.cache/pg-arena/llm_toy``). Concurrent runs
wait on a file lock for the one that trains.
"""
from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Callable

import numpy as np
import torch
from torch import nn

from suites.llm_toy.models import (RewardModel, attention_inputs, bradley_terry_loss, build_policy,
                                   build_scalar_model, copy_backbone, generate)

# 2: keyed by the device, the package versions and the preset's architecture; trained on one
# thread; responses with a special token inside no longer score as their text without it.
# 3: generation and the reward model drop a batch's common left padding (models.trim_left_padding)
CACHE_VERSION = 3
# A special token sampled inside a response (PAD, BOS) reads as this character, which no task's
# alphabet has: such a response is never an exact match, and its length counts the token
# (a tokenizer's decode drops special tokens: "12<pad>34" would read "1234").
SPECIAL_IN_RESPONSE = "\ufffd"


def cache_root() -> Path:
    base = os.environ.get("PG_ARENA_CACHE") or Path.home() / ".cache" / "pg-arena"
    return Path(base) / "llm_toy"


@contextmanager
def _locked(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def cached(kind: str, spec: dict, build: Callable[[], dict]) -> dict:
    """``build()``'s payload, stored under a hash of ``spec``; built once across processes."""
    import transformers
    spec = {"cache_version": CACHE_VERSION, "kind": kind, **spec,
            "versions": {"torch": torch.__version__, "transformers": transformers.__version__}}
    key = hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()[:16]
    root = cache_root()
    path = root / f"{kind}-{key}.pt"
    with _locked(root / f"{kind}-{key}.lock"):
        if path.exists():
            try:
                return torch.load(path, weights_only=False, map_location="cpu")
            except Exception:   # a corrupt entry: rebuild it
                path.unlink(missing_ok=True)
        print(f"llm_toy: training the {kind} warm start (cached in {path})", file=sys.stderr)
        # on one thread whatever the process's share of the cores: the same weights whichever
        # process of a sweep happens to train them (a sum over two threads rounds otherwise)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            payload = build()
        finally:
            torch.set_num_threads(threads)
        payload["spec"] = spec
        buf = io.BytesIO()
        torch.save(payload, buf)
        fd, tmp = tempfile.mkstemp(dir=root, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(buf.getvalue())
        os.replace(tmp, path)
        (root / f"{kind}-{key}.json").write_text(json.dumps(spec, indent=2, sort_keys=True, default=str))
        return payload


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def encode_prompts(tokenizer, prompts: list[str], prompt_len: int) -> torch.Tensor:
    """``[N, P]``: BOS + prompt tokens, left-padded with PAD."""
    out = torch.full((len(prompts), prompt_len), tokenizer.pad_id, dtype=torch.long)
    for i, p in enumerate(prompts):
        ids = [tokenizer.bos_id] + tokenizer.encode(p)
        if len(ids) > prompt_len:
            raise ValueError(f"prompt {p!r} is {len(ids)} tokens, longer than the prompt length {prompt_len}")
        out[i, prompt_len - len(ids):] = torch.tensor(ids)
    return out


def encode_responses(tokenizer, responses: list[str], length: int | None = None) -> torch.Tensor:
    """``[N, R]``: response tokens, EOS, then PAD."""
    rows = [tokenizer.encode(r) + [tokenizer.eos_id] for r in responses]
    length = length or max(len(r) for r in rows)
    out = torch.full((len(rows), length), tokenizer.pad_id, dtype=torch.long)
    for i, r in enumerate(rows):
        r = r[:length]
        out[i, : len(r)] = torch.tensor(r)
    return out


def decode_responses(tokenizer, responses: torch.Tensor, lengths: torch.Tensor) -> tuple[list[str], list[bool]]:
    """Texts (up to, not including, EOS) and whether each response ended with EOS (read from
    the token ids: a tokenizer may drop special tokens from the text). A PAD or BOS sampled
    inside the response is ``SPECIAL_IN_RESPONSE`` in the text."""
    specials = {tokenizer.pad_id, tokenizer.bos_id} - {tokenizer.eos_id}
    texts, has_eos = [], []
    for row, n in zip(responses.tolist(), lengths.tolist()):
        ended = n > 0 and row[n - 1] == tokenizer.eos_id
        body = row[: n - 1] if ended else row[:n]
        pieces, start = [], 0
        for i, token in enumerate(body + [None]):       # the text between special tokens, each one U+FFFD
            if token is None or token in specials:
                pieces.append(tokenizer.decode(body[start:i]))
                start = i + 1
        texts.append(SPECIAL_IN_RESPONSE.join(pieces))
        has_eos.append(ended)
    return texts, has_eos


def sft_loss(policy: nn.Module, seq: torch.Tensor, prompt_len: int, pad_id: int, eos_id: int) -> torch.Tensor:
    """Token-mean cross-entropy of the response tokens (EOS included) given the prompt."""
    attn, positions, valid = attention_inputs(seq, prompt_len, pad_id, eos_id)
    logits = policy(input_ids=seq, attention_mask=attn, position_ids=positions, use_cache=False).logits
    logits = logits[:, prompt_len - 1: -1].float()
    targets = seq[:, prompt_len:]
    nll = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), reduction="none")
    mask = valid.reshape(-1).float()
    return (nll * mask).sum() / mask.sum()


def train_sft(env, device: torch.device) -> dict:
    """Supervised fine-tuning of a fresh (or checkpoint) policy on the task's demonstrations."""
    cfg, task, tok = env.cfg, env.task, env.tokenizer
    policy = build_policy(cfg.model, tok, env.max_positions, cfg.attn_implementation, cfg.sft_seed).to(device)
    rng = np.random.default_rng(cfg.sft_seed)
    optimizer = torch.optim.Adam(policy.parameters(), lr=cfg.sft_lr)
    steps = env.sft_steps
    losses = []
    for _ in range(steps):
        prompts = task.prompts(rng, cfg.sft_batch_size, "train")
        demos = [task.demonstration(p, rng) for p in prompts]
        seq = torch.cat([encode_prompts(tok, prompts, env.prompt_len), encode_responses(tok, demos)], 1).to(device)
        loss = sft_loss(policy, seq, env.prompt_len, tok.pad_id, tok.eos_id)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return {"policy": {k: v.cpu() for k, v in policy.state_dict().items()}, "sft_steps": steps,
            "sft_final_loss": float(np.mean(losses[-10:])) if losses else float("nan")}


def preference_pairs(env, policy: nn.Module, rng: np.random.Generator, num_pairs: int, split: str,
                     device: torch.device, generator: torch.Generator):
    """Pairs of SFT samples for one prompt each, labelled by the hidden gold score with
    Bradley-Terry noise: P(a preferred) = sigmoid((gold_a - gold_b) / temperature).
    Returns token rows (chosen, rejected) ``[M, P + R]`` and their gold scores."""
    task, tok, cfg = env.task, env.tokenizer, env.cfg
    prompts = task.prompts(rng, num_pairs, split)
    ids = encode_prompts(tok, prompts + prompts, env.prompt_len).to(device)
    responses, lengths, _ = generate(policy, ids, env.max_new_tokens, tok.pad_id, tok.eos_id, generator=generator,
                                     bf16=cfg.bf16)
    texts, has_eos = decode_responses(tok, responses.cpu(), lengths.cpu())
    gold = torch.tensor([task.gold(p, t, e) for p, t, e in zip(prompts + prompts, texts, has_eos)])
    seq = torch.cat([ids, responses], 1)
    a, b = seq[:num_pairs], seq[num_pairs:]
    ga, gb = gold[:num_pairs], gold[num_pairs:]
    p_a = torch.sigmoid((ga - gb) / cfg.pref_temperature)
    a_wins = torch.from_numpy(rng.random(num_pairs) < p_a.numpy()).to(device)
    chosen = torch.where(a_wins.unsqueeze(1), a, b)
    rejected = torch.where(a_wins.unsqueeze(1), b, a)
    gold_chosen = torch.where(a_wins.cpu(), ga, gb)
    gold_rejected = torch.where(a_wins.cpu(), gb, ga)
    return chosen, rejected, gold_chosen, gold_rejected


@torch.no_grad()
def pair_accuracy(rm: RewardModel, chosen, rejected, gold_chosen, gold_rejected) -> dict:
    """Held-out accuracy: against the (noisy) labels, and against the gold order (ties left out)."""
    rc, rr = rm.raw(chosen).cpu(), rm.raw(rejected).cpu()
    correct = rc > rr
    untied = gold_chosen != gold_rejected
    gold_order = (gold_chosen > gold_rejected) == correct
    return {"label_accuracy": float(correct.float().mean()),
            "gold_accuracy": float(gold_order[untied].float().mean()) if untied.any() else float("nan"),
            "bt_loss": float(bradley_terry_loss(rc, rr))}


def train_reward_model(env, sft_state: dict, device: torch.device) -> dict:
    """InstructGPT's recipe in miniature: RM initialised from the SFT model, trained on
    pairs of SFT samples by Bradley-Terry loss, then normalised so that SFT samples score
    mean 0 and std 1 (N+ implementation details)."""
    cfg, tok = env.cfg, env.tokenizer
    policy = build_policy(cfg.model, tok, env.max_positions, cfg.attn_implementation, cfg.sft_seed)
    policy.load_state_dict(sft_state)
    policy.to(device)
    scalar = build_scalar_model(cfg.model, tok, env.max_positions, cfg.attn_implementation, cfg.sft_seed + 1)
    copy_backbone(policy, scalar)
    rm = RewardModel(scalar, env.prompt_len, tok.pad_id, tok.eos_id, cfg.bf16).to(device)
    rng = np.random.default_rng(cfg.sft_seed + 2)
    generator = torch.Generator(device).manual_seed(cfg.sft_seed + 3)
    train = preference_pairs(env, policy, rng, cfg.rm_pairs, "train", device, generator)
    held_out = preference_pairs(env, policy, rng, max(256, cfg.rm_pairs // 8), "eval", device, generator)
    optimizer = torch.optim.Adam(rm.parameters(), lr=cfg.rm_lr)
    chosen, rejected = train[0], train[1]
    for step in range(cfg.rm_steps):
        idx = torch.from_numpy(rng.integers(0, chosen.shape[0], cfg.rm_batch_size)).to(device)
        loss = bradley_terry_loss(rm.raw(chosen[idx]), rm.raw(rejected[idx]))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        scores = torch.cat([rm.raw(chosen), rm.raw(rejected)])
        rm.shift.fill_(float(scores.mean()))
        rm.scale.fill_(float(scores.std().clamp(min=1e-6)))
    stats = pair_accuracy(rm, *held_out)
    return {"reward_model": {k: v.cpu() for k, v in rm.state_dict().items()}, "rm_held_out": stats,
            "rm_train": pair_accuracy(rm, *train)}
