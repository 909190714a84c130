"""The GRPO-fix variants (issue 31): dr_grpo, gspo, cispo, reinforce_pp, reinforce_pp_baseline.

Their shared pieces against TRL's GRPOTrainer loss on the same tensors where TRL implements them
(the naive loops are in test_losses.py and test_advantages.py), their registration and defaults,
the planner's refusals, and one update of each on a small ragged group batch."""
import types
from collections import defaultdict

import pytest
import torch

import algos
from algos.losses import (aggregate, cispo_loss, clipped_surrogate, gspo_surrogate, kl_estimate, sequence_log_ratio,
                          sequence_ratio)
from core.errors import ConfigError
from test_algorithms import group_batch, group_update_moves_toward_positive, make_agent, make_algo
from test_losses import ragged

VARIANTS = ("dr_grpo", "gspo", "cispo", "reinforce_pp", "reinforce_pp_baseline")


def gen(seed):
    return torch.Generator().manual_seed(seed)


# --------------------------------------------------------------------------------------
# TRL's GRPOTrainer._compute_loss on the same tensors


class _Accelerator:
    num_processes = 1
    sync_gradients = True

    def gather(self, x):
        return x

    gather_for_metrics = gather

    def reduce(self, x, reduction="sum"):
        return x


def trl_loss(logp, logp_old, adv_seq, mask, *, loss_type, level="token", beta=0.0, logp_ref=None,
             epsilon=0.2, epsilon_high=None, max_completion_length=None):
    """TRL's ``GRPOTrainer._compute_loss`` on our time-major tensors: the trainer's own method on a
    stand-in trainer whose forward pass returns ``logp`` (batch-major there) and whose accelerator
    is one process; eval mode (no gradient-accumulation scaling). Returns (loss, d loss / d logp)."""
    from trl.trainer.grpo_trainer import GRPOTrainer
    lp = logp.t().contiguous().clone().requires_grad_(True)        # [B, T]
    B, T = lp.shape
    fake = types.SimpleNamespace(
        _get_per_token_logps_and_entropies=lambda *a, **k: (lp, torch.zeros_like(lp), None),
        top_entropy_quantile=1.0, off_policy_mask_threshold=None, importance_sampling_level=level, beta=beta,
        args=types.SimpleNamespace(use_bias_correction_kl=False, delta=None, steps_per_generation=1),
        loss_type=loss_type, epsilon_low=epsilon, epsilon_high=epsilon if epsilon_high is None else epsilon_high,
        use_vllm=False, vllm_importance_sampling_correction=False, model=types.SimpleNamespace(training=False),
        current_gradient_accumulation_steps=1, accelerator=_Accelerator(), max_completion_length=max_completion_length,
        _entropy_bonus_enabled=False, aux_loss_enabled=False, _metrics=defaultdict(lambda: defaultdict(list)))
    m = mask.t().contiguous()
    inputs = {"prompt_ids": torch.zeros(B, 1, dtype=torch.long), "prompt_mask": torch.ones(B, 1, dtype=torch.long),
              "completion_ids": torch.zeros(B, T, dtype=torch.long), "completion_mask": m,
              "advantages": adv_seq, "old_per_token_logps": logp_old.t().contiguous(),
              "num_items_in_batch": m.sum()}
    if logp_ref is not None:
        inputs["ref_per_token_logps"] = logp_ref.t().contiguous()
    loss = GRPOTrainer._compute_loss(fake, None, inputs)
    loss.backward()
    return loss.detach(), lp.grad.t()


def ours(logp, objective, mask, mode, **kwargs):
    lp = logp.clone().requires_grad_(True)
    loss = aggregate(objective(lp), mask, mode, **kwargs)
    loss.backward()
    return loss.detach(), lp.grad


TOL = {"rtol": 1e-10, "atol": 1e-12}   # float64 on both sides: the same arithmetic up to the order of sums


def trl_inputs(seed, scale=0.3):
    logp, logp_old, adv, adv_seq, mask, _ = ragged(seed, scale=scale, dtype=torch.float64)
    # TRL multiplies by the mask after the loss: its padding must hold finite numbers
    logp, logp_old = logp * mask, logp_old * mask
    return logp, logp_old, adv, adv_seq, mask


@pytest.mark.parametrize("loss_type,mode", [("grpo", "seq-mean-token-mean"), ("bnpo", "token-mean"),
                                            ("dapo", "token-mean"), ("dr_grpo", "seq-mean-token-sum-norm")])
@pytest.mark.parametrize("beta", [0.0, 0.04])
def test_clipped_losses_and_aggregations_equal_trl(loss_type, mode, beta):
    pytest.importorskip("trl")
    logp, logp_old, adv, adv_seq, mask = trl_inputs(6)
    logp_ref = (logp_old + 0.2 * torch.randn(logp.shape, generator=gen(7), dtype=torch.float64)) * mask
    L = 16   # the length limit: TRL's max_completion_length

    def objective(lp):
        per_token = clipped_surrogate(lp, logp_old, adv, 0.2, 0.28)
        return per_token + beta * kl_estimate(lp, logp_ref, "k3") if beta else per_token

    got = ours(logp, objective, mask, mode, max_length=L)
    want = trl_loss(logp, logp_old, adv_seq, mask, loss_type=loss_type, beta=beta, logp_ref=logp_ref,
                    epsilon=0.2, epsilon_high=0.28, max_completion_length=L)
    torch.testing.assert_close(got[0], want[0], **TOL)
    torch.testing.assert_close(got[1] * mask, want[1] * mask, **TOL)
    assert (want[1] != 0).any()


@pytest.mark.parametrize("seed", [8, 9])
def test_gspo_equals_trl_sequence_level(seed):
    pytest.importorskip("trl")
    logp, logp_old, adv, adv_seq, mask = trl_inputs(seed, scale=1e-3)
    eps_low, eps_high = 3e-4, 4e-4                     # GSPO's; the random ratios straddle them
    s = sequence_ratio(logp, logp_old, mask)
    assert ((s < 1 - eps_low) | (s > 1 + eps_high)).any() and ((s > 1 - eps_low) & (s < 1 + eps_high)).any()
    got = ours(logp, lambda lp: gspo_surrogate(lp, logp_old, adv, mask, eps_low, eps_high), mask,
               "seq-mean-token-mean")
    want = trl_loss(logp, logp_old, adv_seq, mask, loss_type="grpo", level="sequence", epsilon=eps_low,
                    epsilon_high=eps_high)
    torch.testing.assert_close(got[0], want[0], **TOL)
    torch.testing.assert_close(got[1] * mask, want[1] * mask, **TOL)
    torch.testing.assert_close(sequence_log_ratio(logp, logp_old, mask),
                               ((logp - logp_old) * mask).sum(0) / mask.sum(0), **TOL)


@pytest.mark.parametrize("eps_max,clip_acts", [(1.2, True), (5.0, False)])
def test_cispo_equals_trl(eps_max, clip_acts):
    pytest.importorskip("trl")
    logp, logp_old, adv, adv_seq, mask = trl_inputs(10, scale=0.4)
    # 1.2 compares the clipped weights, 5.0 the unclipped path (no ratio reaches it)
    assert bool((torch.exp(logp - logp_old)[mask > 0] > eps_max).any()) == clip_acts
    # TRL clamps the weight at epsilon_high itself, with no lower bound: clip_eps_high = eps_max - 1,
    # clip_eps_low = 1 (a lower bound of 0, which a ratio never reaches)
    got = ours(logp, lambda lp: cispo_loss(lp, logp_old, adv, 1.0, eps_max - 1), mask, "token-mean")
    want = trl_loss(logp, logp_old, adv_seq, mask, loss_type="cispo", epsilon=0.2, epsilon_high=eps_max)
    torch.testing.assert_close(got[0], want[0], **TOL)
    torch.testing.assert_close(got[1] * mask, want[1] * mask, **TOL)


# --------------------------------------------------------------------------------------
# the variants: registered, their defaults sourced, one update on a ragged group batch


def test_variants_register_and_subclass_the_built_in_they_modify():
    parents = {"dr_grpo": "grpo", "gspo": "grpo", "cispo": "grpo", "reinforce_pp": "grpo",
               "reinforce_pp_baseline": "reinforce_pp"}
    for name, parent in parents.items():
        cls = algos.get(name)
        assert cls.name == name and issubclass(cls, algos.get(parent)) and cls.rollout == "groups"
    assert not set(VARIANTS) & set(algos.builtin_names())


def test_variant_defaults():
    cfg = algos.get("dr_grpo").Config()
    assert (cfg.scale_rewards, cfg.loss_agg) == (False, "seq-mean-token-sum-norm")
    # GRPO's KL term, so that only the two changes of Dr. GRPO's §3.1 differ from grpo (the docstring)
    assert (cfg.kl_coef, cfg.kl_estimator) == (algos.get("grpo").Config().kl_coef, algos.get("grpo").Config().kl_estimator)
    cfg = algos.get("gspo").Config()
    assert (cfg.clip_eps_low, cfg.clip_eps_high, cfg.kl_coef, cfg.importance_sampling_level) == (3e-4, 4e-4, 0.0,
                                                                                                 "sequence")
    cfg = algos.get("cispo").Config()
    assert (cfg.clip_eps_low, cfg.clip_eps_high, cfg.loss_agg, cfg.kl_coef) == (1.0, 0.2, "token-mean", 0.0)
    cfg = algos.get("reinforce_pp").Config()
    assert (cfg.kl_coef, cfg.kl_reward_coef, cfg.gamma) == (0.0, 0.01, 1.0)
    cfg = algos.get("reinforce_pp_baseline").Config()
    assert (cfg.kl_coef, cfg.kl_reward_coef, cfg.kl_estimator) == (1e-3, 0.0, "k2")
    assert algos.get("reinforce_pp").needs(cfg).reference


@pytest.mark.parametrize("name", VARIANTS)
def test_every_default_quotes_its_source(name):
    """Each option a variant's Config declares carries its source (what ``help`` prints), and so
    does each llm_toy default it gets."""
    import dataclasses

    import suites
    from harness.options import field_comments
    cls = algos.get(name)
    own = set(vars(cls.Config).get("__annotations__", {}))
    assert own, name
    comments = field_comments(cls.Config)
    for field in own:
        assert comments.get(field), f"{name}.{field}: a default without its source"
    assert {f.name for f in dataclasses.fields(cls.Config)} >= own
    sources = suites.get("llm_toy").default_sources(cls)
    assert sources and all(sources.values())


@pytest.mark.parametrize("name", VARIANTS)
def test_variant_update_raises_logp_of_positive_advantage_actions(name):
    options = {}
    if name in ("gspo",):
        options["clip_eps_low"] = options["clip_eps_high"] = 0.2   # the MLP's first step moves far past 4e-4
    metrics = group_update_moves_toward_positive(name, length_limit=10, **options)
    assert metrics["first_ratio_error"] < 1e-5


@pytest.mark.parametrize("name", ["reinforce_pp", "reinforce_pp_baseline"])
def test_kl_in_the_reward_is_old_minus_reference_on_the_batch(name):
    """REINFORCE++ folds beta (log pi_old - log pi_ref) into the reward (the baseline form: the
    response's sum, into its score). With pi_old away from pi_ref, the advantages equal the pure
    estimator (tested against its token loop in test_advantages.py) on a KL computed here from an
    independent copy of the initial network."""
    from algos.advantages import group_baseline_normalized, reinforce_pp
    beta = 0.5
    agent = make_agent(0)
    algo = make_algo(name, agent, group_size=4, num_groups=3, kl_reward_coef=beta)   # pi_ref: the agent now
    with torch.no_grad():
        for p in agent.parameters():                                                  # pi_old moves away
            p.add_(0.2 * torch.randn(p.shape, generator=gen(7)))
    batch, _ = group_batch(agent, seed=3)
    with torch.no_grad():
        ref_logp = make_agent(0).dist(batch.obs).log_prob(batch.actions)
    kl = (batch.logp_old - ref_logp) * batch.mask
    assert kl.abs().max() > 0.05
    if name == "reinforce_pp":
        want = reinforce_pp(batch.scores, batch.mask, kl, beta, 1.0)
    else:
        want = group_baseline_normalized(batch.scores - beta * kl.sum(0), batch.groups, batch.mask)
    torch.testing.assert_close(algo.advantages(batch), want, rtol=1e-5, atol=1e-6)
    # and the KL's sign matters: the other sign gives other advantages
    flipped = (reinforce_pp(batch.scores, batch.mask, -kl, beta, 1.0) if name == "reinforce_pp" else
               group_baseline_normalized(batch.scores + beta * kl.sum(0), batch.groups, batch.mask))
    assert (algo.advantages(batch) - flipped).abs().max() > 1e-3


def test_dr_grpo_needs_the_length_limit_and_uses_it():
    agent = make_agent(0)
    batch, _ = group_batch(agent, seed=2)                         # no length limit
    algo = make_algo("dr_grpo", agent, group_size=4, num_groups=3)
    with pytest.raises(ValueError, match="max_length"):
        algo.update(batch)
    # the loss is the token sums over the limit: twice the limit, half the loss
    losses = []
    for limit in (10, 20):
        agent = make_agent(0)
        batch, _ = group_batch(agent, seed=2, length_limit=limit)
        losses.append(make_algo("dr_grpo", agent, group_size=4, num_groups=3, num_epochs=1,
                                num_minibatches=1).update(batch)["policy_loss"])
    assert losses[0] != 0 and losses[0] == pytest.approx(2 * losses[1], rel=1e-5)


# --------------------------------------------------------------------------------------
# bad input, refused when the run is configured or planned


def test_unknown_aggregation_is_refused_naming_the_valid_modes():
    for name in ("grpo", "dapo", "rloo", "dr_grpo"):
        with pytest.raises(ConfigError, match="seq-mean-token-sum-norm"):
            algos.get(name).Config(loss_agg="seq-sum")
    with pytest.raises(ConfigError, match="sequence, sequence_token"):
        algos.get("gspo").Config(importance_sampling_level="token")
    with pytest.raises(ConfigError, match="loss_agg='token-mean' is not valid; valid: seq-mean-token-mean"):
        algos.get("gspo").Config(loss_agg="token-mean")   # GSPO's 1/G sum over responses needs it
    with pytest.raises(ConfigError, match="kl_reward_coef"):
        algos.get("reinforce_pp").Config(kl_reward_coef=-1.0)


@pytest.mark.parametrize("suite", ["mujoco", "atari"])
def test_sequence_level_options_are_refused_where_columns_are_episodes(suite, tmp_path):
    from harness.config import plan_runs, SweepConfig
    env = {"mujoco": "Hopper-v5", "atari": "Pong-v5"}[suite]
    if suite == "atari":
        pytest.importorskip("envpool")
    sweep = SweepConfig(suite=suite, algo=("gspo",), env=(env,), results_dir=str(tmp_path), scale="smoke")
    with pytest.raises(ConfigError, match="importance_sampling_level=sequence.*valid suites: llm_toy"):
        plan_runs(sweep, {}, {})
    # the token-level variants plan there
    for name in ("dr_grpo", "cispo", "reinforce_pp"):
        assert plan_runs(SweepConfig(suite=suite, algo=(name,), env=(env,), results_dir=str(tmp_path),
                                     scale="smoke"), {}, {})
