"""The LLM toy suite: per-token rewards and the EOS penalty against hand-computed numbers,
the reward model's Bradley-Terry loss and held-out accuracy, exact log-probabilities
(generation = training, first ratio 1), group rollouts, micro-batch gradient accumulation
in every aggregation mode, and a smoke run of every algorithm through the command line.

One warm start (SFT, ~100 small steps) is trained per session into a temporary cache.
"""
import csv
import json
import math

import numpy as np
import pytest
import torch

pytest.importorskip("transformers")

import algos  # noqa: E402
from algos.losses import AGGREGATION_MODES, aggregate, clipped_surrogate  # noqa: E402
from harness.config import ConfigError, parse_sweep, plan_runs, split_args  # noqa: E402
from suites.llm_toy import LLMToyConfig, LLMToySuite, evaluate  # noqa: E402
from suites.llm_toy.collect import AdaptiveKLController, apply_missing_eos, per_token_rewards  # noqa: E402
from suites.llm_toy.models import (LMAgent, attention_inputs, bradley_terry_loss, generate,  # noqa: E402
                                   trim_left_padding)
from suites.llm_toy.tasks import CharTokenizer, KeywordsTask, SortTask  # noqa: E402

ALL = ("reinforce", "trpo", "ppo_clip", "ppo_kl", "grpo", "rloo", "dapo")
# A small reward model for the tests (the suite's default trains on 4096 pairs).
SMALL_RM = dict(sft_steps=60, rm_pairs=1024, rm_steps=100)


@pytest.fixture(scope="session", autouse=True)
def llm_cache():
    """Warm starts go to the session's cache (tests/conftest.py sets it before any worker process
    starts, so the smoke run's workers see it too), never to the user's."""
    import os
    from pathlib import Path
    assert Path(os.environ["PG_ARENA_CACHE"]).name.startswith("pg_arena_test_cache_")


@pytest.fixture(scope="session")
def suite():
    return LLMToySuite()


@pytest.fixture(scope="session")
def sort_env(suite, llm_cache):
    return suite.make_env("sort", LLMToyConfig())


@pytest.fixture(scope="session")
def keywords_env(suite, llm_cache):
    return suite.make_env("keywords", LLMToyConfig(**SMALL_RM))


def make(suite, env_id, cfg, name, seed=0, **algo_overrides):
    cls = algos.get(name)
    algo_cfg = cls.Config(**{**suite.defaults_for(cls), **algo_overrides})
    env = suite.make_env(env_id, cfg)
    agent = suite.make_agent(env, cfg)
    collector, steps_per_batch = suite.make_collector(env_id, cfg, cls.needs(algo_cfg), algo_cfg, seed)
    return env, agent, collector, cls(agent, algo_cfg, total_updates=10, seed=seed)


# ---------------------------------------------------------------------------------------
# rewards

def test_per_token_rewards_against_a_hand_computed_example():
    # two completions: 3 tokens and 2 tokens (the second column's last step is padding)
    logp = torch.tensor([[-1.0, -0.5], [-2.0, -1.0], [-0.5, -9.0]])
    logp_ref = torch.tensor([[-1.5, -0.5], [-1.0, -3.0], [-0.5, -1.0]])
    mask = torch.tensor([[1.0, 1.0], [1.0, 1.0], [1.0, 0.0]])
    scores = torch.tensor([2.0, -1.0])
    rewards = per_token_rewards(scores, logp, logp_ref, mask, kl_coef=0.1)
    # r_t = -0.1 (logp - logp_ref); the score lands on the last real token
    expected = torch.tensor([[-0.1 * 0.5, 0.0],
                             [-0.1 * -1.0, -0.1 * 2.0 - 1.0],
                             [0.0 + 2.0, 0.0]])
    torch.testing.assert_close(rewards, expected)
    # summed: score - beta * KL_k1 of the sequence
    torch.testing.assert_close(rewards.sum(0), scores - 0.1 * ((logp - logp_ref) * mask).sum(0))


def test_missing_eos_gets_the_fixed_penalty(suite, sort_env):
    scores = torch.tensor([1.0, 0.0, 0.5])
    has_eos = torch.tensor([True, False, False])
    torch.testing.assert_close(apply_missing_eos(scores, has_eos, -1.0), torch.tensor([1.0, -1.0, -1.0]))
    torch.testing.assert_close(apply_missing_eos(scores, has_eos, None), scores)
    # End to end: 3 new tokens cannot hold a sorted answer of 3-6 digits and its EOS.
    cfg = LLMToyConfig(max_new_tokens=3, missing_eos_score=-10.0)   # Tulu 3's -10
    _, agent, collector, _ = make(suite, "sort", cfg, "ppo_clip")
    batch, episodes = collector.collect(agent)
    cut = batch.truncated == 1
    assert batch.length_limit == 3 and cut.float().mean() > 0.8     # a few stop early with a wrong answer
    assert torch.equal(batch.lengths[cut], torch.full((int(cut.sum()),), 3))
    expected = torch.where(cut, torch.tensor(-10.0), torch.tensor(0.0))
    assert torch.equal(batch.scores, expected)
    # the penalty is the last token's reward, next to the KL term (zero here: pi = pi_ref)
    last = batch.rewards[batch.lengths - 1, torch.arange(batch.num_columns)]
    torch.testing.assert_close(last, expected)
    assert [e.ret for e in episodes] == expected.tolist()


def test_adaptive_kl_controller_follows_ziegler():
    kl = AdaptiveKLController(0.1, target=6.0, horizon=10_000)
    kl.update(9.0, n=100)                       # error = min(9/6 - 1, 0.2) = 0.2
    assert kl.value == pytest.approx(0.1 * (1 + 0.2 * 100 / 10_000))
    kl.update(5.4, n=100)                       # error = -0.1
    assert kl.value == pytest.approx(0.1 * 1.002 * (1 - 0.1 * 0.01))


# ---------------------------------------------------------------------------------------
# reward model

@pytest.mark.parametrize("name", ["ppo_clip", "ppo_kl"])
def test_ppo_value_term_weighs_what_the_n_plus_details_weigh(suite, name):
    """Huang et al. 2024 (N+ details, ppo.py): loss = pg_loss + vf_coef * vf_loss with vf_coef 0.1 and
    vf_loss = 0.5 * masked mean of max((V - R)^2, (V_clipped - R)^2), V_clipped = V_old + clip(V - V_old,
    -0.2, 0.2). The suite's weight times this project's value_loss must equal that term, computed
    here token by token."""
    from algos.base import value_loss
    cfg = algos.get(name).Config(**suite.defaults_for(algos.get(name)))
    g = torch.Generator().manual_seed(3)
    values, values_old, returns = (torch.randn(6, 5, generator=g) for _ in range(3))
    mask = (torch.rand(6, 5, generator=g) > 0.3).float()
    ours = cfg.vf_coef * value_loss(values, returns, mask, values_old, cfg.clip_eps)
    total, count = 0.0, 0
    for t in range(6):
        for n in range(5):
            if mask[t, n]:
                v, v_old, r = float(values[t, n]), float(values_old[t, n]), float(returns[t, n])
                v_clipped = v_old + min(max(v - v_old, -0.2), 0.2)
                total += max((v - r) ** 2, (v_clipped - r) ** 2)
                count += 1
    assert cfg.value_clip and cfg.clip_eps == 0.2
    assert float(ours) == pytest.approx(0.1 * 0.5 * total / count, rel=1e-6)


def test_bradley_terry_loss_is_the_formula():
    g = torch.Generator().manual_seed(0)
    chosen, rejected = torch.randn(50, generator=g), torch.randn(50, generator=g)
    naive = np.mean([-math.log(1 / (1 + math.exp(-(c - r)))) for c, r in zip(chosen.tolist(), rejected.tolist())])
    assert float(bradley_terry_loss(chosen, rejected)) == pytest.approx(naive, rel=1e-5)
    assert float(bradley_terry_loss(torch.zeros(3), torch.zeros(3))) == pytest.approx(math.log(2))


def test_reward_model_ranks_held_out_pairs_above_chance(keywords_env):
    held_out = keywords_env.rm_payload["rm_held_out"]
    # chance is 0.5 and log 2 = 0.693; the noisy labels cap accuracy well below 1
    assert held_out["gold_accuracy"] > 0.62, held_out
    assert held_out["label_accuracy"] > 0.6, held_out
    assert held_out["bt_loss"] < math.log(2), held_out


def test_preference_task_scores_with_the_reward_model_and_evaluates_on_gold(suite, keywords_env):
    cfg = LLMToyConfig(**SMALL_RM)
    _, agent, collector, _ = make(suite, "keywords", cfg, "ppo_clip")
    batch, _ = collector.collect(agent)
    # normalised reward model: SFT samples score about mean 0, std 1
    assert abs(float(batch.scores.mean())) < 0.5 and 0.5 < float(batch.scores.std()) < 2.0
    # the value model starts as the reward model (InstructGPT)
    rm = keywords_env.reward_model(agent.device)
    for (name, p), q in zip(agent.value_model.named_parameters(), rm.model.parameters()):
        assert torch.equal(p, q), name
    row = evaluate(agent, keywords_env, 32, seed=5)
    assert -1.0 <= row["eval_return_mean"] <= KeywordsTask.max_gold
    assert row["eval_kl_ref"] == pytest.approx(0.0, abs=1e-6)     # the policy is the reference
    assert set(row) >= {"eval_greedy_return", "eval_proxy_reward", "eval_response_length", "eval_entropy"}


# ---------------------------------------------------------------------------------------
# exact log-probabilities and the first ratio

def test_generation_logp_equals_the_training_pass(sort_env):
    agent = sort_env.new_agent()
    rollout = sort_env.rollout(agent, sort_env.task.prompts(np.random.default_rng(0), 64, "train"),
                               torch.Generator().manual_seed(0))
    with torch.no_grad():
        logp_train = agent.dist(rollout.obs).log_prob(rollout.actions)
    # KV-cache incremental decoding against one pass over prompt + response: float32 rounding only
    assert float((logp_train - rollout.logp_gen).abs().max()) < 1e-5
    # padding is not an action: log-probability exactly 0 there
    assert torch.equal(logp_train[rollout.mask == 0], torch.zeros(int((rollout.mask == 0).sum())))


def _generate_every_row(model, prompts, max_new, pad, eos, generator, greedy=False):
    """The reference: the KV-cache loop over every row at every step (no prompt pass shared by a
    group, no finished rows dropped), stopping when every row has ended."""
    from suites.llm_toy.models import _cache_kwarg
    prompts, _ = trim_left_padding(prompts, prompts.shape[1], pad)
    N = len(prompts)
    attn = (prompts != pad).long()
    pos = (attn.cumsum(-1) - 1).clamp(min=0)
    out = model(input_ids=prompts, attention_mask=attn, position_ids=pos, use_cache=True, logits_to_keep=1)
    cache, pos = out.past_key_values, pos[:, -1:] + 1
    responses = torch.full((N, max_new), pad, dtype=prompts.dtype)
    logps, lengths = torch.zeros(N, max_new), torch.full((N,), max_new)
    done = torch.zeros(N, dtype=torch.bool)
    for t in range(max_new):
        logits = torch.log_softmax(out.logits[:, -1].float(), -1)
        if greedy:
            token = logits.argmax(-1)
        else:
            u = torch.rand(logits.shape, generator=generator)
            token = (logits - torch.log(-torch.log(u))).argmax(-1)
        live = ~done                                  # this step's token is attended to
        for i in range(N):
            if done[i]:
                token[i] = pad
            else:
                responses[i, t], logps[i, t] = token[i], logits[i, token[i]]
                if token[i] == eos:
                    lengths[i], done[i] = t + 1, True
        if bool(done.all()) or t == max_new - 1:
            break
        attn = torch.cat([attn, live.long().unsqueeze(1)], 1)
        out = model(input_ids=token.unsqueeze(1), attention_mask=attn, position_ids=pos, use_cache=True,
                    logits_to_keep=1, **{_cache_kwarg(type(model)): cache})
        cache, pos = out.past_key_values, pos + 1
    return responses, lengths, logps


@pytest.mark.parametrize("distinct, group, greedy, eos_bias", [(16, 8, False, 1.0), (2, 8, False, 1.0),
                                                               (3, 8, False, 1.0), (16, 1, False, 0.5),
                                                               (8, 1, False, 0.5), (3, 1, False, 1.0),
                                                               (16, 8, True, 1.0)])
def test_generation_equals_the_loop_over_every_row_bit_for_bit(sort_env, monkeypatch, distinct, group, greedy,
                                                                eos_bias):
    """Generation runs a group's shared prompt once and drops finished rows from the batch; each
    row's tokens, length and log-probabilities are those of the plain loop over every row, bit for
    bit, and the generator ends in the same state (the same uniforms drawn). Also with fewer
    distinct prompts or rows than the sharing and dropping need (the plain path then)."""
    import suites.llm_toy.models as models
    agent = sort_env.new_agent()
    tok = sort_env.tokenizer
    from suites.llm_toy.warmstart import encode_prompts
    texts = sort_env.task.prompts(np.random.default_rng(2), distinct, "train")
    ids = encode_prompts(tok, [p for p in texts for _ in range(group)], sort_env.prompt_len)
    selections = []                                    # the row counts the cache was cut or copied to
    real_cache_rows = models.cache_rows
    monkeypatch.setattr(models, "cache_rows",
                        lambda cache, rows: selections.append(len(rows)) or real_cache_rows(cache, rows))
    with torch.no_grad():
        agent.policy.lm_head.weight[tok.eos_id] += eos_bias  # lengths from 1 token to the limit
        a, b = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
        got = generate(agent.policy, ids, 12, tok.pad_id, tok.eos_id, generator=a, greedy=greedy, bf16=False)
        want = _generate_every_row(agent.policy, ids, 12, tok.pad_id, tok.eos_id, b, greedy=greedy)
    lengths = want[1]
    assert int(lengths.min()) < int(lengths.max()), "the test needs rows that end at different steps"
    for x, y in zip(got, want):
        assert torch.equal(x, y)
    assert torch.equal(a.get_state(), b.get_state())
    N = len(ids)
    shared = distinct >= models.COMPACT_MIN_ROWS and group > 1
    assert (selections[:1] == [N]) == shared                         # the prompt pass copied to the rows
    drops = selections[1:] if shared else selections
    if N > models.COMPACT_MIN_ROWS:
        assert drops and all(n < N for n in drops), selections       # finished rows left the batch
    else:
        assert not selections
    if (distinct, group) in ((3, 8), (16, 1), (8, 1)):                 # down to the fewest rows
        assert drops[-1] == models.COMPACT_MIN_ROWS, selections


def _layer_kv(cache, layer):
    if hasattr(cache, "layers"):                     # transformers 5
        return cache.layers[layer].keys, cache.layers[layer].values
    return cache.key_cache[layer], cache.value_cache[layer]


def test_cache_rows_selects_and_repeats_rows_of_either_cache_form():
    from transformers import DynamicCache
    from suites.llm_toy.models import cache_rows, rows_selectable
    keys = [torch.randn(3, 2, 5, 4) for _ in range(2)]
    values = [torch.randn(3, 2, 5, 4) for _ in range(2)]
    rows = torch.tensor([2, 0, 0, 1])
    legacy = tuple(zip(keys, values))
    cache = DynamicCache()
    for layer, (k, v) in enumerate(zip(keys, values)):
        cache.update(k, v, layer)
    assert rows_selectable(legacy) and rows_selectable(cache)
    assert not rows_selectable(tuple(torch.randn(3, 5, 8) for _ in range(2)))   # one fused tensor a layer
    legacy, cache = cache_rows(legacy, rows), cache_rows(cache, rows)
    for layer, (k, v) in enumerate(zip(keys, values)):
        assert torch.equal(legacy[layer][0], k[rows]) and torch.equal(legacy[layer][1], v[rows])
        got_k, got_v = _layer_kv(cache, layer)
        assert torch.equal(got_k, k[rows]) and torch.equal(got_v, v[rows])


def test_trim_left_padding_drops_the_columns_every_row_pads():
    pad = 0
    rng = np.random.default_rng(0)
    for _ in range(50):
        P, N = int(rng.integers(1, 9)), int(rng.integers(1, 6))
        rows = torch.from_numpy(rng.integers(1, 5, (N, P + 3)))
        pads = rng.integers(0, P, N)                       # every prompt keeps at least its BOS
        for i, k in enumerate(pads):
            rows[i, :k] = pad
        first = 0                                          # the loop: columns PAD in every row
        while first < P and all(int(rows[i, first]) == pad for i in range(N)):
            first += 1
        trimmed, P_left = trim_left_padding(rows, P, pad)
        assert first == int(pads.min()) and P_left == P - first and torch.equal(trimmed, rows[:, first:])


def test_common_left_padding_changes_no_log_probability(sort_env):
    """Rows padded further on the left (a task whose longest prompt is longer, like add's
    generalisation set) give the log-probabilities of the rows without that padding, exactly,
    and those of the untrimmed forward pass to float rounding."""
    agent = sort_env.new_agent()
    rollout = sort_env.rollout(agent, sort_env.task.prompts(np.random.default_rng(1), 32, "train"),
                               torch.Generator().manual_seed(1))
    P, pad, eos = agent.prompt_len, agent.pad_id, agent.eos_id
    R, N, L = rollout.obs.shape
    wide_obs = torch.cat([torch.full((R, N, 3), pad, dtype=rollout.obs.dtype), rollout.obs], -1)
    wide = LMAgent(agent.policy, None, P + 3, pad, eos, bf16=False)
    with torch.no_grad():
        logp = agent.dist(rollout.obs).log_prob(rollout.actions)
        logp_wide = wide.dist(wide_obs).log_prob(rollout.actions)
        seq = wide_obs[0, :, : P + 3 + R]                 # the reference: every column through the model
        attn, positions, valid = attention_inputs(seq, P + 3, pad, eos)
        logits = agent.policy(input_ids=seq, attention_mask=attn, position_ids=positions).logits
        reference = torch.log_softmax(logits[:, P + 2: P + 2 + R].float(), -1).gather(
            -1, rollout.actions.T.unsqueeze(-1)).squeeze(-1).T * valid.T
    assert torch.equal(logp_wide, logp)
    assert float((logp_wide - reference).abs().max()) < 1e-5


@pytest.mark.parametrize("name", ["ppo_clip", "grpo", "rloo"])
@pytest.mark.parametrize("from_generation", [True, False])
def test_first_minibatch_ratio_is_one(suite, sort_env, name, from_generation):
    cfg = LLMToyConfig(logp_from_generation=from_generation)
    _, agent, collector, algo = make(suite, "sort", cfg, name, num_epochs=2)
    batch, _ = collector.collect(agent)
    metrics = algo.update(batch)
    assert metrics["first_ratio_error"] < 1e-5, metrics
    assert all(math.isfinite(v) for v in metrics.values()), metrics


def test_sampling_is_reproducible_and_collector_state_resumes(suite, sort_env):
    cfg = LLMToyConfig()
    _, agent, c1, _ = make(suite, "sort", cfg, "grpo")
    _, _, c2, _ = make(suite, "sort", cfg, "grpo")
    b1, _ = c1.collect(agent)
    b2, _ = c2.collect(agent)
    assert torch.equal(b1.actions, b2.actions)
    state = c1.state_dict()
    after1, _ = c1.collect(agent)
    c2.load_state_dict(state)
    after2, _ = c2.collect(agent)
    assert torch.equal(after1.actions, after2.actions) and torch.equal(after1.groups, after2.groups)
    assert c1.global_step == c2.global_step == 2 * b1.num_columns


# ---------------------------------------------------------------------------------------
# group rollouts

def test_group_rollout_gives_g_distinct_completions_of_one_prompt(suite, keywords_env):
    cfg = LLMToyConfig(**SMALL_RM)
    _, agent, collector, _ = make(suite, "keywords", cfg, "grpo")
    G, num_groups = 8, 16
    batch, episodes = collector.collect(agent)
    assert batch.num_columns == G * num_groups and len(episodes) == G * num_groups
    assert not batch.splittable_steps and batch.length_limit == keywords_env.max_new_tokens
    P = keywords_env.prompt_len
    rows = batch.obs[0]                                         # [N, P + limit]
    distinct_groups = 0
    for g in torch.unique(batch.groups):
        cols = torch.nonzero(batch.groups == g).squeeze(1)
        assert cols.numel() == G
        prompts = rows[cols, :P]
        assert (prompts == prompts[0]).all()                    # one shared prompt (initial state)
        completions = {tuple(rows[c, P:P + int(batch.lengths[c])].tolist()) for c in cols}
        distinct_groups += len(completions) == G
    # independent samples at temperature 1 (the SFT policy's entropy is ~2 nats per token)
    assert distinct_groups >= num_groups - 2
    # per-column fields line up with the token rows
    assert torch.equal(batch.mask.sum(0).long(), batch.lengths)
    assert torch.equal(batch.dones.sum(0), torch.ones(batch.num_columns))


# ---------------------------------------------------------------------------------------
# micro-batch gradient accumulation

def _loss_normalizer(mask, mode):
    """The whole batch's denominator of an aggregation mode: tokens, or sequences."""
    return mask.sum() if mode == "token-mean" else (mask.sum(0) > 0).sum()


@pytest.mark.parametrize("mode", AGGREGATION_MODES)
def test_microbatch_accumulation_equals_the_full_batch_gradient(sort_env, mode):
    agent = sort_env.new_agent()
    params = agent.policy_parameters()
    rollout = sort_env.rollout(agent, sort_env.task.prompts(np.random.default_rng(1), 24, "train"),
                               torch.Generator().manual_seed(1))
    g = torch.Generator().manual_seed(2)
    N = rollout.mask.shape[1]
    adv = torch.randn(N, generator=g).unsqueeze(0) * rollout.mask
    logp_old = rollout.logp_old + 0.3 * torch.randn(rollout.logp_old.shape, generator=g) * rollout.mask

    def loss(cols, normalizer):
        logp = agent.dist(rollout.obs[:, cols]).log_prob(rollout.actions[:, cols])
        per_token = clipped_surrogate(logp, logp_old[:, cols], adv[:, cols], 0.2)
        # seq-mean-token-sum-norm's constant: the response length limit (any constant: it scales every micro-batch alike)
        return aggregate(per_token, rollout.mask[:, cols], mode, normalizer, max_length=rollout.mask.shape[0])

    def grads(chunks, normalizer_of):
        agent.zero_grad(set_to_none=True)
        for cols in chunks:
            loss(cols, normalizer_of(cols)).backward()
        return torch.cat([p.grad.reshape(-1) for p in params])

    everything = torch.arange(N)
    full = grads([everything], lambda cols: None)
    micro = torch.tensor_split(everything, 4)
    whole = _loss_normalizer(rollout.mask, mode)
    accumulated = grads(micro, lambda cols: whole)
    torch.testing.assert_close(accumulated, full, rtol=1e-4, atol=1e-7)
    # the bug class: each micro-batch normalised by its own count, then averaged
    naive = grads(micro, lambda cols: _loss_normalizer(rollout.mask[:, cols], mode) * len(micro))
    if mode == "token-mean":   # micro-batches hold different token counts: a different gradient
        assert not torch.allclose(naive, full, rtol=1e-3, atol=1e-6)


# ---------------------------------------------------------------------------------------
# configuration

def test_task_and_model_are_aliases(tmp_path):
    top, algo, suite_args = split_args(["suite=llm_toy", "task=sort", "model=tiny", "algo=grpo"])
    assert top["env"] == "sort" and suite_args == {"model": "tiny"}
    runs = plan_runs(parse_sweep({**top, "results_dir": str(tmp_path), "scale": "smoke"}), algo, suite_args)
    assert [r.env for r in runs] == ["sort"] and runs[0].suite_cfg["model"] == "tiny"
    with pytest.raises(ConfigError, match="given twice"):
        split_args(["task=sort", "env=keywords"])
    with pytest.raises(ConfigError, match="given twice"):
        split_args(["model=tiny", "suite.model=small"])
    with pytest.raises(ConfigError, match="unknown task"):
        plan_runs(parse_sweep({"suite": "llm_toy", "env": "chess", "results_dir": str(tmp_path)}), {}, {})
    with pytest.raises(ConfigError, match="model="):
        plan_runs(parse_sweep({"suite": "llm_toy", "results_dir": str(tmp_path)}), {}, {"model": "/no/such/dir"})
    assert parse_sweep({"device": "auto"}).device in ("cpu", "cuda")


def test_tokenizer_and_tasks():
    tok = CharTokenizer()
    assert tok.decode(tok.encode("0123=") + [tok.eos_id, tok.pad_id]) == "0123="
    task = SortTask()
    assert task.gold("3141=", "1134", True) == 1.0
    assert task.gold("3141=", "1134", False) == 0.0 and task.gold("3141=", "1143", True) == 0.0
    train = task.prompts(np.random.default_rng(0), 200, "train")
    held_out = task.eval_prompts(50)
    assert not set(train) & set(held_out) and held_out == task.eval_prompts(50)
    kw = KeywordsTask()
    assert kw.gold("123:", "123", True) == pytest.approx(1.5) == kw.max_gold
    assert kw.gold("123:", "1231231", True) == pytest.approx(1.5 - 0.2 * 3)    # verbose
    assert kw.gold("123:", "123", False) == -1.0


def test_local_checkpoint_is_accepted(tmp_path, sort_env):
    folder = tmp_path / "ckpt"
    sort_env.new_agent().policy.save_pretrained(folder)
    sort_env.tokenizer.save(folder)
    suite = LLMToySuite()
    cfg = LLMToyConfig(model=str(folder), sft_steps=2)
    env = suite.make_env("sort", cfg)
    agent = suite.make_agent(env, cfg)
    ids = torch.tensor([[sort_env.tokenizer.bos_id] + sort_env.tokenizer.encode("321=")])
    responses, lengths, _ = generate(agent.policy, ids, 8, env.tokenizer.pad_id, env.tokenizer.eos_id, greedy=True)
    assert int(lengths[0]) >= 1


# ---------------------------------------------------------------------------------------
# end to end

@pytest.mark.slow
def test_smoke_run_of_every_algorithm(tmp_path, capsys, sort_env):
    from harness import cli
    code = cli.main(["suite=llm_toy", "scale=smoke", "jobs=2", f"results_dir={tmp_path}"])
    out, err = capsys.readouterr()
    assert code == 0, err
    for name in ALL:
        run_dir = tmp_path / "llm_toy" / "sort" / name / "seed0"
        record = json.loads((run_dir / "run.json").read_text())
        assert record["status"] == "done", (name, record.get("error"))
        with open(run_dir / "evals.csv") as f:
            evals = list(csv.DictReader(f))
        with open(run_dir / "metrics.csv") as f:
            metrics = list(csv.DictReader(f))
        assert evals and metrics, name
        assert {"eval_greedy_return", "eval_kl_ref", "eval_proxy_reward"} <= set(evals[0])
        assert 0.0 <= float(evals[-1]["eval_return_mean"]) <= 1.0
        if "first_ratio_error" in metrics[0]:
            assert float(metrics[0]["first_ratio_error"]) < 1e-5, name
        assert int(metrics[-1]["global_step"]) >= 128


def test_a_special_token_inside_a_response_is_never_an_exact_match():
    """Generation samples from the whole vocabulary: "12<pad>34<eos>" must not read as "1234"
    (the tokenizer's decode drops special tokens), nor "<bos>" anywhere before EOS."""
    from suites.llm_toy.warmstart import SPECIAL_IN_RESPONSE, decode_responses
    tok = CharTokenizer("0123456789")
    digits = [tok.encode(c)[0] for c in "1234"]
    rows = torch.tensor([[digits[0], digits[1], tok.pad_id, digits[2], digits[3], tok.eos_id],
                         [tok.bos_id, *digits, tok.eos_id],
                         [*digits, tok.eos_id, tok.pad_id]])
    texts, has_eos = decode_responses(tok, rows, torch.tensor([6, 6, 5]))
    assert texts == [f"12{SPECIAL_IN_RESPONSE}34", f"{SPECIAL_IN_RESPONSE}1234", "1234"]
    assert has_eos == [True, True, True]
    task = SortTask()
    prompt = "4213"
    assert task.answer(prompt) == "1234"
    assert [task.gold(prompt, t, e) for t, e in zip(texts, has_eos)] == [0.0, 0.0, 1.0]
