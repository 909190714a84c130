"""Models of the LLM toy suite: Hugging Face causal LMs built from a small config (or a
local checkpoint), the agent that exposes them to the algorithms, KV-cache generation,
and the scalar-head models (reward model, value model).

Layout of an LLM batch (``core/batch.py``): a column is one completion, a step one
response token. ``obs[t, n]`` is the whole token row of completion ``n`` (the prompt
left-padded to ``P`` tokens, then the response right-padded with PAD), the same for every
``t`` (an expanded view: no copies), so the agent runs the transformer once over
prompt + response and reads the next-token distribution at every response position.
Positions after the first EOS are padding: their action has log-probability 0.
"""
from __future__ import annotations

import contextlib
import copy
import inspect
from functools import lru_cache

import torch
from torch import Tensor, nn
from torch.distributions import Categorical, kl_divergence, register_kl

# Presets built from a config (no download). tiny: the TRL reference, a 2-layer,
# 128-wide Llama (~330k parameters with the 15-token alphabet); small: for a GPU.
MODEL_PRESETS = {
    "tiny": dict(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=4),
    "small": dict(hidden_size=512, intermediate_size=1536, num_hidden_layers=8, num_attention_heads=8,
                  num_key_value_heads=8),
}


def _no_dropout(config) -> None:
    """Dropout off everywhere, so the log-probabilities of generation and training agree."""
    for key, value in list(config.to_dict().items()):
        if isinstance(value, float) and ("dropout" in key or "pdrop" in key):
            setattr(config, key, 0.0)


def build_config(model: str, tokenizer, max_positions: int, attn_implementation: str):
    from transformers import AutoConfig, LlamaConfig
    if model in MODEL_PRESETS:
        config = LlamaConfig(vocab_size=tokenizer.vocab_size, max_position_embeddings=max_positions,
                             pad_token_id=tokenizer.pad_id, bos_token_id=tokenizer.bos_id,
                             eos_token_id=tokenizer.eos_id, tie_word_embeddings=False,
                             **MODEL_PRESETS[model])
    else:
        config = AutoConfig.from_pretrained(model)
    _no_dropout(config)
    config._attn_implementation = attn_implementation
    return config


def build_policy(model: str, tokenizer, max_positions: int, attn_implementation: str, seed: int) -> nn.Module:
    """A causal LM: a fresh preset (initialised from ``seed``) or a local checkpoint."""
    from transformers import AutoModelForCausalLM
    config = build_config(model, tokenizer, max_positions, attn_implementation)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        if model in MODEL_PRESETS:
            lm = AutoModelForCausalLM.from_config(config)
        else:
            lm = AutoModelForCausalLM.from_pretrained(model, config=config)
    return lm.eval()


def build_scalar_model(model: str, tokenizer, max_positions: int, attn_implementation: str, seed: int) -> nn.Module:
    """A sequence classifier of the same family with one output (reward and value models)."""
    from transformers import AutoModelForSequenceClassification
    config = build_config(model, tokenizer, max_positions, attn_implementation)
    config.num_labels = 1
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        scalar = AutoModelForSequenceClassification.from_config(config)
        nn.init.zeros_(scalar.score.weight)
    return scalar.eval()


def copy_backbone(src_lm: nn.Module, dst_scalar: nn.Module) -> None:
    """Initialise a scalar model's transformer from a causal LM's (InstructGPT: RM from SFT)."""
    dst_scalar.base_model.load_state_dict(src_lm.base_model.state_dict())


@lru_cache(maxsize=None)
def _cache_kwarg(cls: type) -> str:
    """transformers >= 5.? names the KV cache ``cache``; earlier versions ``past_key_values``."""
    return "cache" if "cache" in inspect.signature(cls.forward).parameters else "past_key_values"


@lru_cache(maxsize=None)
def _accepts(cls: type, name: str) -> bool:
    return name in inspect.signature(cls.forward).parameters


def autocast_for(module: nn.Module, bf16: bool):
    """bf16 autocast on CUDA (when enabled), nothing on the CPU."""
    device = next(module.parameters()).device
    if bf16 and device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


# ---------------------------------------------------------------------------------------
# token rows: masks and positions

def response_mask(responses: Tensor, eos_id: int) -> Tensor:
    """``[N, R]`` bool: the response tokens up to and including the first EOS (all of them
    when there is none: the response was cut at the length limit)."""
    is_eos = (responses == eos_id).to(torch.int32)
    return (is_eos.cumsum(-1) - is_eos) == 0


def attention_inputs(seq: Tensor, prompt_len: int, pad_id: int, eos_id: int) -> tuple[Tensor, Tensor, Tensor]:
    """For token rows ``seq [N, P + R]``: (attention mask, position ids, response mask [N, R]).
    Prompts are left-padded (masked, positions start at the first real token); the
    response is masked after its first EOS."""
    resp_valid = response_mask(seq[:, prompt_len:], eos_id)
    attn = torch.cat([seq[:, :prompt_len] != pad_id, resp_valid], dim=1)
    positions = (attn.long().cumsum(-1) - 1).clamp(min=0)
    return attn.long(), positions, resp_valid


def trim_left_padding(seq: Tensor, prompt_len: int, pad_id: int) -> tuple[Tensor, int]:
    """Token rows without the leading columns that are PAD in every row, and the prompt length
    that remains: prompts are left-padded to the task's longest prompt (``P``, which the
    generalisation set sets, e.g. ``add``'s a digit longer than training), and a batch whose
    prompts are all shorter would run attention over columns every row masks. Positions and
    masks come from the remaining tokens as before, so every result is the same up to floating
    point (a masked key adds an exact 0 to the softmax); TRL likewise pads to the batch's longest
    prompt. A row's BOS is never PAD, so at least one column of the prompt remains."""
    holds_token = (seq[:, :prompt_len] != pad_id).any(0)
    first = int(holds_token.to(torch.int8).argmax()) if prompt_len else 0
    return (seq[:, first:], prompt_len - first) if first else (seq, prompt_len)


class SequenceCategorical(Categorical):
    """Next-token distributions at the response positions, ``[R, N]`` batch shape.

    Positions past the end of a response (``valid = 0``) are padding, not actions: their
    log-probability and entropy are 0, so a ratio, a KL estimate or a masked sum over them
    is exactly 0 whatever the two models think of the PAD token."""

    def __init__(self, logits: Tensor, valid: Tensor):
        super().__init__(logits=logits, validate_args=False)
        self.valid = valid

    def log_prob(self, value: Tensor) -> Tensor:
        lp = super().log_prob(value.to(self.logits.device))
        return torch.where(self.valid, lp, torch.zeros_like(lp))

    def entropy(self) -> Tensor:
        h = super().entropy()
        return torch.where(self.valid, h, torch.zeros_like(h))


@register_kl(SequenceCategorical, SequenceCategorical)
def _kl_sequence_categorical(p: SequenceCategorical, q: SequenceCategorical) -> Tensor:
    # From log-softmax: finite even where a probability underflows to 0 in float32.
    kl = (p.probs * (p.logits - q.logits)).sum(-1)
    return torch.where(p.valid, kl, torch.zeros_like(kl))


class LMAgent(nn.Module):
    """The agent contract (``core/agent.py``) for a causal LM and its value model.

    ``obs [R, N, L]`` (token rows, see the module docstring) -> ``dist(obs)`` over the ``R``
    response positions; ``value(obs) [R, N]`` = V(prompt + response[:t]) from the value
    model (None for a policy-only copy). Generation is ``generate``; ``act`` is unused
    because the suite's collector generates whole completions itself.
    """

    has_critic = True

    def __init__(self, policy: nn.Module, value_model: nn.Module | None, prompt_len: int, pad_id: int,
                 eos_id: int, bf16: bool = True):
        super().__init__()
        self.policy, self.value_model = policy, value_model
        self.prompt_len, self.pad_id, self.eos_id, self.bf16 = prompt_len, pad_id, eos_id, bf16

    @property
    def device(self) -> torch.device:
        return next(self.policy.parameters()).device

    def _rows(self, obs: Tensor) -> tuple[Tensor, int, int]:
        """The token rows of ``obs`` (prompt + the first ``steps`` response tokens), their prompt
        length ``P`` after trimming the batch's common left padding, and ``steps``."""
        steps = obs.shape[0]
        seq, P = trim_left_padding(obs[0, :, : self.prompt_len + steps].to(self.device), self.prompt_len, self.pad_id)
        return seq, P, steps

    def dist(self, obs: Tensor) -> SequenceCategorical:
        seq, P, steps = self._rows(obs)
        attn, positions, valid = attention_inputs(seq, P, self.pad_id, self.eos_id)
        with autocast_for(self.policy, self.bf16):
            logits = self.policy(input_ids=seq, attention_mask=attn, position_ids=positions, use_cache=False).logits
        logits = logits[:, P - 1: P + steps - 1].float().transpose(0, 1)   # [R, N, V]: position P-1+t predicts token t
        return SequenceCategorical(logits, valid.transpose(0, 1))

    def value(self, obs: Tensor) -> Tensor:
        seq, P, steps = self._rows(obs)
        attn, positions, _ = attention_inputs(seq, P, self.pad_id, self.eos_id)
        values = scalar_outputs(self.value_model, seq, attn, positions, self.bf16)   # [N, P + R]
        return values[:, P - 1: P + steps - 1].transpose(0, 1)

    def policy_parameters(self) -> list[nn.Parameter]:
        return list(self.policy.parameters())

    def value_parameters(self) -> list[nn.Parameter]:
        return list(self.value_model.parameters()) if self.value_model is not None else []

    def frozen_copy(self) -> "LMAgent":
        """The policy alone, deep-copied and frozen (pi_old, pi_ref): shares nothing trainable."""
        copy_ = LMAgent(copy.deepcopy(self.policy), None, self.prompt_len, self.pad_id, self.eos_id, self.bf16)
        return copy_.requires_grad_(False).eval()

    def observe(self, obs: Tensor) -> None:
        """No input statistics to update."""

    def act(self, obs, rng, deterministic: bool = False):
        raise NotImplementedError("the llm_toy collector generates whole completions (LMAgent.generate)")

    def env_action(self, actions):
        return actions

    @torch.no_grad()
    def generate(self, prompts: Tensor, max_new_tokens: int, generator: torch.Generator | None = None,
                 greedy: bool = False) -> tuple[Tensor, Tensor, Tensor]:
        return generate(self.policy, prompts, max_new_tokens, self.pad_id, self.eos_id,
                        generator=generator, greedy=greedy, bf16=self.bf16)


def scalar_outputs(scalar_model: nn.Module, seq: Tensor, attn: Tensor, positions: Tensor, bf16: bool) -> Tensor:
    """The scalar head applied at every position: ``[N, L]``."""
    with autocast_for(scalar_model, bf16):
        hidden = scalar_model.base_model(input_ids=seq, attention_mask=attn, position_ids=positions,
                                         use_cache=False).last_hidden_state
        return scalar_model.score(hidden).squeeze(-1).float()


class RewardModel(nn.Module):
    """A sequence classifier scoring prompt + response at its last token (EOS), with an
    affine normalisation fitted after training (N+ details: SFT samples score mean 0, std 1)."""

    def __init__(self, scalar_model: nn.Module, prompt_len: int, pad_id: int, eos_id: int, bf16: bool = True):
        super().__init__()
        self.model = scalar_model
        self.prompt_len, self.pad_id, self.eos_id, self.bf16 = prompt_len, pad_id, eos_id, bf16
        self.register_buffer("shift", torch.zeros(()))
        self.register_buffer("scale", torch.ones(()))

    def raw(self, seq: Tensor) -> Tensor:
        """Unnormalised scores ``[N]`` of token rows ``seq [N, P + R]``."""
        seq, P = trim_left_padding(seq.to(self.shift.device), self.prompt_len, self.pad_id)
        attn, positions, valid = attention_inputs(seq, P, self.pad_id, self.eos_id)
        last = P + valid.sum(-1) - 1
        values = scalar_outputs(self.model, seq, attn, positions, self.bf16)
        return values.gather(1, last.unsqueeze(1)).squeeze(1)

    def forward(self, seq: Tensor) -> Tensor:
        return (self.raw(seq) - self.shift) / self.scale


def bradley_terry_loss(chosen: Tensor, rejected: Tensor) -> Tensor:
    """``-log sigmoid(r_chosen - r_rejected)``, averaged over pairs (Bradley & Terry 1952;
    the reward-model loss of Ziegler et al. 2019 and InstructGPT)."""
    return -nn.functional.logsigmoid(chosen - rejected).mean()


# Matrix products on 1-3 rows take another kernel than on more rows, whose last bits differ (torch
# 2.13 on the CPU, one thread: F.linear on rows [:m] of a batch equals the batch's rows bit for bit
# for m >= 4; with more threads other row counts split the work otherwise too).
COMPACT_MIN_ROWS = 4


def _cache_of(out):
    """The KV cache a model returned (``cache`` in newer transformers, ``past_key_values`` before)."""
    return getattr(out, "cache", None) or getattr(out, "past_key_values", None)


def rows_selectable(cache) -> bool:
    """Whether ``cache_rows`` can take rows of this KV cache: a transformers ``Cache``, or the legacy
    tuple of per-layer (key, value) tensors with the batch first (not, e.g., GPT-BigCode's fused
    one-tensor layers of transformers 4.x)."""
    if hasattr(cache, "reorder_cache"):
        return True
    return isinstance(cache, tuple) and all(
        isinstance(layer, tuple) and len(layer) == 2 and all(isinstance(t, Tensor) and t.dim() == 4 for t in layer)
        for layer in cache)


def cache_rows(cache, rows: Tensor):
    """The KV cache of the batch's ``rows`` only (``rows_selectable``): a transformers ``Cache``
    (reordered in place), or the legacy tuple of per-layer (key, value) tensors."""
    if hasattr(cache, "reorder_cache"):
        cache.reorder_cache(rows)
        return cache
    return tuple(tuple(t.index_select(0, rows) for t in layer) for layer in cache)


@torch.no_grad()
def generate(model: nn.Module, prompts: Tensor, max_new_tokens: int, pad_id: int, eos_id: int,
             generator: torch.Generator | None = None, greedy: bool = False, bf16: bool = True,
             share_prompts: bool = True, drop_finished: bool = True) -> tuple[Tensor, Tensor, Tensor]:
    """Batched sampling at temperature 1 with the KV cache.

    ``prompts [N, P]`` left-padded. Returns ``responses [N, max_new_tokens]`` (PAD after the
    first EOS), ``lengths [N]`` (EOS included) and ``logp [N, max_new_tokens]``, the
    log-probabilities of the sampled tokens as generation saw them (0 on padding).
    Sampling is Gumbel-max on uniforms from ``generator``: an exact draw from
    ``softmax(logits)``, reproducible from the generator's state. ``share_prompts``: a prompt that
    several rows repeat runs through the model once; ``drop_finished``: finished rows leave the
    batch (both where the model's cache allows, ``rows_selectable``). On the CPU with one torch
    thread (the suite's runs beside others; its canaries; the tests) neither changes a bit of the
    result for a dense model; elsewhere, floating-point rounding at most. False, False: the plain
    loop over every row (``bench/llm_generation.py``).
    """
    device = next(model.parameters()).device
    prompts, _ = trim_left_padding(prompts.to(device), prompts.shape[1], pad_id)
    N = prompts.shape[0]
    cache_kw = _cache_kwarg(type(model))
    extra = {"logits_to_keep": 1} if _accepts(type(model), "logits_to_keep") else {}
    attn = (prompts != pad_id).long()
    positions = (attn.cumsum(-1) - 1).clamp(min=0)
    # A group of completions (GRPO, RLOO: 8 per prompt) repeats its prompt: the prompt's pass runs
    # once per distinct prompt, and its KV cache and next-token logits are copied to the group's
    # rows (the same bits as one pass over every row, from COMPACT_MIN_ROWS distinct rows up).
    distinct, copies = torch.unique(prompts, dim=0, return_inverse=True) if share_prompts else (prompts, None)
    once = COMPACT_MIN_ROWS <= len(distinct) < N

    def prompt_pass(rows: Tensor):
        mask = (rows != pad_id).long()
        with autocast_for(model, bf16):
            out = model(input_ids=rows, attention_mask=mask, position_ids=(mask.cumsum(-1) - 1).clamp(min=0),
                        use_cache=True, **extra)
        return out, _cache_of(out)

    out, cache = prompt_pass(distinct if once else prompts)
    selectable = rows_selectable(cache)
    if once and not selectable:     # a cache whose rows cannot be copied: every row's prompt after all
        once = False
        out, cache = prompt_pass(prompts)
    last_logits = out.logits[:, -1]
    if once:
        cache, last_logits = cache_rows(cache, copies), last_logits[copies]
    next_pos = positions[:, -1:] + 1
    responses = torch.full((N, max_new_tokens), pad_id, dtype=prompts.dtype, device=device)
    logps = torch.zeros((N, max_new_tokens), device=device)
    lengths = torch.full((N,), max_new_tokens, dtype=torch.long, device=device)
    rows = torch.arange(N, device=device)      # the rows still in the model's batch (and cache), in order
    done = torch.zeros(N, dtype=torch.bool, device=device)
    for t in range(max_new_tokens):
        logits = torch.log_softmax(last_logits.float(), -1)
        if greedy:
            token = logits.argmax(-1)
        else:
            # the uniforms of every row, finished or not: each row's draws do not depend on when others end
            u = torch.rand((N, logits.shape[1]), generator=generator, device=device)[rows]
            token = (logits - torch.log(-torch.log(u))).argmax(-1)
        live = ~done
        token = torch.where(live, token, torch.full_like(token, pad_id))
        responses[rows, t] = token
        logps[rows, t] = torch.where(live, logits.gather(1, token.unsqueeze(1)).squeeze(1), torch.zeros((), device=device))
        ended = live & (token == eos_id)
        lengths[rows[ended]] = t + 1
        done = done | ended
        if t == max_new_tokens - 1 or bool(done.all()):
            break
        attn = torch.cat([attn, live.long().unsqueeze(1)], dim=1)
        if drop_finished and selectable and 4 * int(done.sum()) >= len(rows) and len(rows) > COMPACT_MIN_ROWS:
            # A quarter of the batch has ended: drop those rows from the batch and the KV cache, so
            # the remaining steps run on the live rows only (one long completion would otherwise
            # keep every finished row in every matmul to the length limit). At least
            # COMPACT_MIN_ROWS stay, finished ones filling up: a row's numbers are then the same bits
            # as in the whole batch (tested).
            keep = (~done).nonzero().squeeze(1)
            if len(keep) < COMPACT_MIN_ROWS:
                keep = torch.cat([keep, done.nonzero().squeeze(1)[: COMPACT_MIN_ROWS - len(keep)]]).sort().values
            rows, token, attn, next_pos, done = rows[keep], token[keep], attn[keep], next_pos[keep], done[keep]
            cache = cache_rows(cache, keep)
        with autocast_for(model, bf16):
            out = model(input_ids=token.unsqueeze(1), attention_mask=attn, position_ids=next_pos,
                        use_cache=True, **{cache_kw: cache}, **extra)
        cache = _cache_of(out)
        last_logits = out.logits[:, -1]
        next_pos = next_pos + 1
    return responses, lengths, logps
