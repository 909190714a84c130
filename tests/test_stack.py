"""The batched engine's update (algos/stack.py) against the same runs trained alone.

Each case builds K runs (different seeds and numeric options), collects one batch per run,
and updates copies of them twice: alone (``algo.update``) and stacked
(``update_runs``). The first minibatch's gradients, the logged losses and the
parameters after the update must agree to 1e-5 relative (a batched matrix product sums in
another order than a lone one: not bit-identical)."""
import copy
import dataclasses

import pytest
import torch

import algos
import suites
from algos.stack import RunStack, StackedAdam, per_run
from core.batch import stacked_minibatches
from harness.train import seed_everything

ENV = "Hopper-v5"


def _runs(name, options_per_run, num_steps=256, minibatch_size=64, num_epochs=2):
    """K (agent, algo, batch) built as the harness builds a run (seeded per run)."""
    suite = suites.get("mujoco")
    cls = algos.get(name)
    scfg = suite.Config()
    out = []
    for seed, options in enumerate(options_per_run):
        seed_everything(seed)
        sizes = {"num_steps": num_steps, "minibatch_size": minibatch_size, "num_epochs": num_epochs}
        fields = cls.Config.__dataclass_fields__
        cfg = cls.Config(**{**suite.defaults_for(cls), **{k: v for k, v in sizes.items() if k in fields}, **options})
        env = suite.make_env(ENV, scfg, train=False)
        agent = suite.make_agent(env, scfg)
        collector, _ = suite.make_collector(ENV, scfg, cls.needs(cfg), cfg, seed)
        algo = cls(agent, cfg, total_updates=10, seed=seed)
        # a first update: Adam moments, observation statistics and a schedule that are not fresh (PPO's
        # annealed learning rate is below its start, so an update stepping with the rate of the update
        # before, set before the run's schedule moved it, shows)
        batch, _, _ = algo.collect(collector, agent)
        algo.update(batch)
        agent.observe(batch.obs.flatten(0, 1))
        batch, _, _ = algo.collect(collector, agent)
        assert algo.updates_done == 1
        out.append((agent, algo, batch))
    return cls, out


def _clone(runs):
    """Deep copies whose optimizers point at the copied parameters."""
    clones = []
    for agent, algo, batch in runs:
        memo = {}
        agent2 = copy.deepcopy(agent, memo)
        algo2 = copy.copy(algo)
        algo2.agent = agent2
        position = {id(p): i for i, p in enumerate(agent.parameters())}
        params2 = list(agent2.parameters())
        for attr in ("params", "policy_params"):
            if hasattr(algo, attr):
                setattr(algo2, attr, [params2[position[id(p)]] for p in getattr(algo, attr)])
        for name, optimizer in algo.optimizers().items():
            group = optimizer.param_groups[0]
            clone = algo.make_optimizer([params2[position[id(p)]] for p in group["params"]], group["lr"])
            clone.load_state_dict(copy.deepcopy(optimizer.state_dict()))   # torch shares the step tensors otherwise
            setattr(algo2, name, clone)
        algo2.generator = torch.Generator().manual_seed(0)
        algo2.generator.set_state(algo.generator.get_state())
        if getattr(algo, "reference", None) is not None:
            algo2.reference = copy.deepcopy(algo.reference)
        clones.append((agent2, algo2, batch))
    return clones


def _close(a, b, rtol=1e-5, atol=1e-7):
    a, b = torch.as_tensor(a, dtype=torch.float64), torch.as_tensor(b, dtype=torch.float64)
    return bool(torch.allclose(a, b, rtol=rtol, atol=atol))


CASES = {
    "ppo_clip, Table 1's clip epsilons": ("ppo_clip", [{"clip_eps": 0.1}, {"clip_eps": 0.2}, {"clip_eps": 0.3},
                                                       {"clip_eps": 0.2}]),
    "ppo_clip, CleanRL's code-level options": ("ppo_clip", [{"adv_norm": "minibatch", "value_clip": True,
                                                             "max_grad_norm": 0.5, "vf_coef": v, "lr": lr}
                                                            for v, lr in ((0.25, 3e-4), (0.5, 1e-4), (1.0, 3e-4))]),
    "ppo_kl, Table 1's penalties (no penalty among them)": (
        "ppo_kl", [{"kl_coef": 0.0, "adaptive": False}, {"kl_target": 0.003}, {"kl_coef": 3.0, "adaptive": False},
                   {"kl_target": 0.03}]),
    "ppo_kl, a sampled KL estimate": ("ppo_kl", [{"kl_estimator": "k3", "kl_coef": b} for b in (0.3, 1.0)]),
    "reinforce, value baseline": ("reinforce", [{"lr": 1e-3}, {"lr": 3e-3, "vf_lr": 3e-4}, {"lr": 1e-3}]),
    "reinforce, no baseline, clipped": ("reinforce", [{"baseline": "none", "max_grad_norm": 0.5, "lr": lr}
                                                       for lr in (1e-3, 1e-2)]),
    "reinforce, mean baseline": ("reinforce", [{"baseline": "mean"}] * 2),
    "trpo, two trust regions": ("trpo", [{"max_kl": 0.01}, {"max_kl": 0.02}, {"max_kl": 0.01}]),
    "grpo, clip epsilons and a KL to pi_ref": ("grpo", [{"clip_eps": e, "kl_coef": 0.04} for e in (0.1, 0.2, 0.3)]),
    "rloo, clipped epochs": ("rloo", [{"num_epochs": 2, "clip_eps": e, "lr": lr} for e, lr in ((0.2, 3e-4), (0.1, 1e-4))]),
    "dapo, clip-higher": ("dapo", [{"clip_eps_high": e} for e in (0.28, 0.2)]),
    "trpo, Fisher on the whole batch": ("trpo", [{"fvp_fraction": 1.0, "max_kl": m} for m in (0.005, 0.05)]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_stacked_update_is_each_runs_own_update(case):
    name, options = CASES[case]
    cls, runs = _runs(name, options)
    alone, together = _clone(runs), _clone(runs)

    first_grads_alone = []
    for agent, algo, batch in alone:
        grads = []
        first_optimizer = next(iter(algo.optimizers()))   # TRPO: the critic's (its policy step is no optimizer's)
        hook = algo.optimizers()[first_optimizer].register_step_pre_hook(
            lambda opt, args, kwargs, grads=grads: grads.append([p.grad.clone() for p in opt.param_groups[0]["params"]])
            if not grads else None)
        algo.metrics_alone = algo.update(batch)
        hook.remove()
        first_grads_alone.append(grads[0])

    suite = suites.get("mujoco")
    stack = RunStack([a for _, a, _ in together], suite.stack_agents([g for g, _, _ in together]),
                     [b for _, _, b in together])
    first_grads_stacked = []
    optimizer = stack.optimizers[first_optimizer]
    step = optimizer.step

    def spy(*args, **kwargs):
        if not first_grads_stacked:
            first_grads_stacked.append([leaf.grad.clone() for leaf in optimizer.leaves])
        return step(*args, **kwargs)

    optimizer.step = spy
    metrics_together = cls.update_runs(stack)
    checked_beta = False

    for k, ((agent_a, algo_a, _), (agent_t, algo_t, _)) in enumerate(zip(alone, together)):
        assert len(first_grads_alone[k]) == len(first_grads_stacked[0])
        for g_alone, g_stacked in zip(first_grads_alone[k], first_grads_stacked[0]):
            assert _close(g_stacked[k], g_alone), f"run {k}: the first minibatch's gradient differs"
        m_alone, m_together = algo_a.metrics_alone, metrics_together[k]
        timing = {"collect_seconds", "update_seconds"}
        assert set(m_alone) - timing == set(m_together) - timing, f"run {k}: other metrics logged"
        for key in ("policy_loss", "value_loss", "kl_penalty", "beta", "kl_measured", "first_ratio_error",
                    "step_accepted", "step_fraction", "kl_line_search", "expected_improve"):
            if key in m_alone:
                assert _close(m_together[key], m_alone[key], rtol=1e-4, atol=1e-6), (k, key)
        for p_a, p_t in zip(agent_a.parameters(), agent_t.parameters()):
            assert _close(p_t, p_a, rtol=1e-4, atol=1e-6), f"run {k}: parameters after the update differ"
        for optimizer_name in algo_a.optimizers():
            state_a = algo_a.optimizers()[optimizer_name].state_dict()["state"]
            state_t = algo_t.optimizers()[optimizer_name].state_dict()["state"]
            for i in state_a:
                assert float(state_t[i]["step"]) == float(state_a[i]["step"])
                assert _close(state_t[i]["exp_avg_sq"], state_a[i]["exp_avg_sq"], rtol=1e-3, atol=1e-12)
        assert algo_t.updates_done == algo_a.updates_done
        if name == "ppo_kl":   # the penalty's weight after this update's adaptation
            assert algo_t.beta == algo_a.beta
            checked_beta = True
    assert checked_beta or name != "ppo_kl"


def test_ppo_kl_takes_pi_olds_means_once_and_they_are_each_minibatchs_own():
    # a Gaussian pi_old with a state-independent std is its means: computed on the whole batch once
    # and cut with the minibatches, they must be pi_old's forward pass on the minibatch's steps
    cls, runs = _runs("ppo_kl", [{}, {"kl_target": 0.03}, {"kl_coef": 3.0, "adaptive": False}])
    suite = suites.get("mujoco")
    stack = RunStack([a for _, a, _ in runs], suite.stack_agents([g for g, _, _ in runs]), [b for _, _, b in runs])
    penalty, per_step = cls.penalty_term(stack.algos, stack.agent, stack.batch)
    old_loc = per_step["old_loc"]                       # [K, T, N, act]
    obs = stack.batch.stacked("obs")
    steps = torch.randperm(obs.shape[1] * obs.shape[2], generator=torch.Generator().manual_seed(0))[:64]
    mb = {"obs": obs.flatten(1, 2)[:, steps].unsqueeze(2), "old_loc": old_loc.flatten(1, 2)[:, steps].unsqueeze(2),
          "mask": None, "logp_old": None}
    with torch.no_grad():
        direct = stack.agent.frozen_copy().dist(mb["obs"])
    assert _close(mb["old_loc"], direct.loc, rtol=1e-5, atol=1e-6)
    from algos.base import Metrics
    with torch.no_grad():   # at theta = theta_old the penalty is 0 (to rounding)
        term = penalty(stack.agent.dist(mb["obs"]), None, mb, Metrics())
    assert term.shape == (3,) and float(term.abs().max()) < 1e-9
    # a sampled estimate reads the log-probabilities only: nothing is computed on the batch
    k3 = [copy.copy(a) for a in stack.algos]
    for a in k3:
        a.cfg = dataclasses.replace(a.cfg, kl_estimator="k3")
    assert cls.penalty_term(k3, stack.agent, stack.batch)[1] == {}


def test_stacked_minibatches_are_each_runs_own_minibatches():
    cls, runs = _runs("ppo_clip", [{}, {}, {}])
    batches = [b for _, _, b in runs]
    gens = [torch.Generator().manual_seed(s) for s in (5, 6, 7)]
    lone = [list(b.minibatches(4, torch.Generator().manual_seed(s))) for b, s in zip(batches, (5, 6, 7))]
    from algos.stack import StackedBatch
    stacked = list(stacked_minibatches(batches, gens, 4, StackedBatch(batches).step_tensors()))
    assert len(stacked) == 4
    for i, mb in enumerate(stacked):
        for k in range(3):
            for key, value in lone[k][i].items():
                if value is None:
                    assert mb[key] is None
                else:
                    assert torch.equal(mb[key][k], value), (i, k, key)


def test_stacked_column_minibatches_are_each_runs_own_column_minibatches():
    """Whole columns (sequence models, ``by="column"``): a stack's minibatch i is each run's own,
    the mask among the fields; a stack of one cuts the run's batch as it cuts it alone."""
    from algos.stack import StackedBatch
    cls, runs = _runs("ppo_clip", [{}, {}])
    batches = []
    for _, _, b in runs:   # 8 columns of 32 steps, some padding
        cut = copy.copy(b)
        for name in ("obs", "actions", "rewards", "dones", "mask", "logp_old", "values"):
            setattr(cut, name, getattr(b, name).reshape(32, 8, *getattr(b, name).shape[2:]))
        cut.mask = cut.mask.clone()
        cut.mask[20:, ::3] = 0
        cut.splittable_steps = False
        batches.append(cut)
    for group in ([batches[0]], batches):
        seeds = (5, 6)[:len(group)]
        lone = [list(b.minibatches(3, torch.Generator().manual_seed(s), by="step")) for b, s in zip(group, seeds)]
        stacked_batch = StackedBatch(group)
        tensors = stacked_batch.step_tensors() | {"mask": stacked_batch.stacked("mask")}
        stacked = list(stacked_minibatches(group, [torch.Generator().manual_seed(s) for s in seeds], 3, tensors))
        assert len(stacked) == 3
        for i, mb in enumerate(stacked):
            for k in range(len(group)):
                assert set(mb) == set(lone[k][i])
                for key, value in lone[k][i].items():
                    assert torch.equal(mb[key][k], value), (i, k, key)


def test_stacked_adam_is_torch_adam_per_run_with_its_own_lr_and_clipping():
    torch.manual_seed(0)
    K, shapes = 3, [(4, 5), (5,)]
    params = [[torch.randn(s, requires_grad=True) for s in shapes] for _ in range(K)]
    lrs, bounds = [1e-2, 3e-3, 1e-3], [None, 0.5, 1e9]
    opts = [torch.optim.Adam(p, lr=lr, eps=1e-5) for p, lr in zip(params, lrs)]
    leaves = [torch.stack([params[k][i].detach() for k in range(K)]).requires_grad_() for i in range(len(shapes))]
    stacked = StackedAdam(leaves, [(o, p) for o, p in zip(opts, params)])
    for step in range(5):
        grads = [[torch.randn(s) * 3 for s in shapes] for _ in range(K)]
        for k in range(K):
            for p, g in zip(params[k], grads[k]):
                p.grad = g.clone()
            if bounds[k] is not None:
                torch.nn.utils.clip_grad_norm_(params[k], bounds[k])
            opts[k].step()
        for i, leaf in enumerate(leaves):
            leaf.grad = torch.stack([grads[k][i] for k in range(K)])
        for k, bound in enumerate(bounds):   # the stack clips to one shared bound: each run in turn here
            if bound is not None:
                norms = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(l.grad[k]) for l in leaves]))
                for l in leaves:
                    l.grad[k] *= torch.clamp(bound / (norms + 1e-6), max=1.0)
        stacked.step()
    for k in range(K):
        for i in range(len(shapes)):
            assert _close(leaves[i][k], params[k][i], rtol=1e-5, atol=1e-7)
    stacked.write_back()
    for k in range(K):
        for p in params[k]:
            assert float(opts[k].state[p]["step"]) == 5.0


def test_per_run_is_a_tensor_also_when_the_runs_agree():
    # a number every run shares is still the per-run float32 tensor: a run's arithmetic does not
    # depend on which runs share its stack (tests/test_invariance.py)
    same = per_run([0.2, 0.2])
    assert same.shape == (2,) and same.dtype == torch.float32 and torch.equal(same, torch.tensor([0.2, 0.2]))
    t = per_run([0.1, 0.3], dims=2)
    assert t.shape == (2, 1, 1) and torch.allclose(t.flatten(), torch.tensor([0.1, 0.3]))
    with pytest.raises(ValueError):
        per_run([None, 0.5])


def test_stacked_gradient_clipping_is_torchs_per_run():
    torch.manual_seed(1)
    K, shapes = 4, [(3, 2), (2,)]
    grads = [[torch.randn(s) * (k + 1) for s in shapes] for k in range(K)]
    leaves = [torch.zeros(K, *s, requires_grad=True) for s in shapes]
    for i, leaf in enumerate(leaves):
        leaf.grad = torch.stack([grads[k][i] for k in range(K)])
    opts = [torch.optim.Adam([torch.zeros(s) for s in shapes]) for _ in range(K)]
    stacked = StackedAdam(leaves, [(o, o.param_groups[0]["params"]) for o in opts])
    norms = stacked.clip_grad_norms_(1.5)
    for k in range(K):
        params = [torch.zeros(s, requires_grad=True) for s in shapes]
        for p, g in zip(params, grads[k]):
            p.grad = g.clone()
        norm = torch.nn.utils.clip_grad_norm_(params, 1.5)
        assert _close(norms[k], norm)
        for p, leaf in zip(params, leaves):
            assert _close(leaf.grad[k], p.grad)


# -- collection: the runs' environments stepped as rows of one ---------------------------------

def test_collecting_together_gives_each_run_the_batch_it_collects_alone():
    """Three runs (one with 2 environments) stepped as rows of one MujocoVecEnv, against each
    collected alone: bit-identical batches and episodes, over batches that cross episode ends,
    and after a checkpoint of the rows restored into a lone run's environment."""
    from core.rollout import collect_together
    suite = suites.get("mujoco")
    cls = algos.get("ppo_clip")
    scfg = suite.Config()
    env_id = "Hopper-v5"
    cfgs = [cls.Config(**{**suite.defaults_for(cls), "num_steps": 300, "num_envs": n}) for n in (1, 2, 1)]
    seeds = [4, 5, 6]
    agents = []
    for seed in seeds:
        seed_everything(seed)
        agents.append(suite.make_agent(suite.make_env(env_id, scfg, train=False), scfg))
    needs = cls.needs(cfgs[0])
    together = [c for c, _ in suite.make_collectors(env_id, scfg, needs, cfgs, seeds)]
    alone = [suite.make_collector(env_id, scfg, needs, c, s)[0] for c, s in zip(cfgs, seeds)]
    # the same with runs of one shape, whose agents act as one (MLPAgent.stacked_actor)
    same = [cls.Config(**{**suite.defaults_for(cls), "num_steps": 300, "num_envs": 2}) for _ in seeds]
    shaped = [c for c, _ in suite.make_collectors(env_id, scfg, needs, same, seeds)]
    shaped_alone = [suite.make_collector(env_id, scfg, needs, c, s)[0] for c, s in zip(same, seeds)]
    for k, ((b1, e1), (b2, e2)) in enumerate(zip(collect_together(shaped, agents),
                                                  [c.collect(a) for c, a in zip(shaped_alone, agents)])):
        for name, value in b1.step_fields().items():
            assert torch.equal(value, b2.step_fields()[name]), (k, name)
    for round_ in range(3):
        results = collect_together(together, agents)
        for k, (collector, agent) in enumerate(zip(alone, agents)):
            batch, episodes = collector.collect(agent)
            b2, e2 = results[k]
            for name, value in batch.step_fields().items():
                assert torch.equal(value, b2.step_fields()[name]), (round_, k, name)
            assert torch.equal(batch.last_value, b2.last_value)
            assert [(e.global_step, e.ret, e.length) for e in episodes] == [(e.global_step, e.ret, e.length)
                                                                            for e in e2]
        if round_ == 1:   # a run leaves the stack: its rows' state resumes in a lone environment
            state = together[1].state_dict()
            lone = suite.make_collector(env_id, scfg, needs, cfgs[1], 99)[0]
            lone.load_state_dict(state)
            assert lone.env_state_exact
            alone[1] = lone
    assert sum(len(e) for _, e in results) > 0


# -- the harness: a stack's runs keep their own fate ---------------------------------------------

def test_a_run_that_diverges_fails_alone_and_its_stack_mates_finish(tmp_path):
    """lr is a per-run option, so lr=inf stacks with lr=3e-4: the diverging run is marked failed
    at its first update, the other two finish with the numbers they get in a stack without it."""
    from harness.config import plan_batches, stack_key
    from harness.train import train_batch
    from tests.helpers import TINY, plan
    words = dict(env="Hopper-v5", steps=1024)
    good = plan(tmp_path, *TINY, seeds=2, **words)
    (bad,) = plan(tmp_path, *TINY, "algo.lr=inf", **words)
    assert stack_key(bad) == stack_key(good[0]) and plan_batches([good[0], bad, good[1]], None, 1) == [
        [good[0], bad, good[1]]]
    records = train_batch([good[0], bad, good[1]])
    assert [r["status"] for r in records] == ["done", "failed", "done"]
    assert records[1]["failed_update"] == 1 and "NonFiniteError" in records[1]["error"]
    alone = plan(tmp_path / "pair", *TINY, seeds=2, **words)
    train_batch(alone)   # the same two seeds stacked without the diverging run
    from fault_helpers import same_numbers
    for a, b in zip(good, alone):
        same_numbers(b.run_dir, a.run_dir)


def test_a_stack_skips_a_run_another_sweep_holds_and_trains_the_rest(tmp_path):
    from harness.executor import RUNNING_ELSEWHERE, run_local
    from harness.locks import RunLock
    from tests.helpers import TINY, plan
    runs = plan(tmp_path, *TINY, seeds=3, env="Hopper-v5", steps=512)
    held = RunLock(runs[1].run_dir)
    assert held.acquire()
    try:
        results = run_local(runs, jobs=1, show_progress=False, batches=[runs])
    finally:
        held.release()
    assert [r["status"] for r in results] == ["done", RUNNING_ELSEWHERE, "done"]
    assert not (runs[1].run_dir / "run.json").exists()


def test_plan_batches_groups_what_can_stack_and_splits_it_evenly():
    from harness.config import plan_batches, stack_key
    from tests.helpers import plan
    runs = plan("/tmp/unused", algo="ppo_clip,ppo_kl,grpo", env="Hopper-v5,HalfCheetah-v5", seeds=5)
    units = plan_batches(runs, None, jobs=2)
    by_key = {}
    for unit in units:
        keys = {stack_key(r) for r in unit}
        assert len(keys) == 1                                      # one kind of run per process
        by_key.setdefault(keys.pop(), []).append(len(unit))
    # grpo stacks too (its seeds, per environment); a config the stacked update does not cover trains alone
    assert len(by_key) == 6 and all(sum(v) == 5 and max(v) - min(v) <= 1 for v in by_key.values())
    assert stack_key(plan("/tmp/unused", "algo.diagnostics=last_epoch", algo="grpo", env="Hopper-v5")[0]) is None
    assert sorted(r.run_id for u in units for r in u) == sorted(r.run_id for r in runs)
    from harness.config import ESTIMATED_ENV_WEIGHT, unit_seconds
    sizes = [unit_seconds(u) for u in units]
    assert sizes == sorted(sizes, reverse=True)                    # the longest processes start first
    # longest first by environment too: of equal stacks, Walker2d's (the slowest physics) before InvertedPendulum's
    order = [u[0].env for u in plan_batches(plan("/tmp/unused", algo="ppo_clip", seeds=2,
                                                 env="InvertedPendulum-v5,Hopper-v5,Walker2d-v5"), None, jobs=2)]
    assert order == ["Walker2d-v5", "Hopper-v5", "InvertedPendulum-v5"]
    # Table 1 on one environment: 24 ppo_kl and 9 ppo_clip runs spread over both jobs to the end;
    # the paper's main job: each (algorithm, environment)'s 3 seeds as one stack
    from harness.config import parse_sweep, plan_runs, split_args
    t, a, s = split_args(["suite=mujoco", "grid=table1", "env=Hopper-v5", "seeds=3", "results_dir=/tmp/unused"])
    table1 = plan_runs(parse_sweep(t), a, s)
    assert [len(u) for u in plan_batches(table1, None, jobs=2)] == [12, 12, 5, 4]
    main = plan("/tmp/unused", algo="reinforce,trpo,ppo_clip,ppo_kl", env="Hopper-v5,Walker2d-v5", seeds=3)
    assert [len(u) for u in plan_batches(main, None, jobs=2)] == [3] * 8
    assert all(len(u) == 1 for u in plan_batches(runs, 1, jobs=2))
    # the time estimate, by hand: a lone ppo_clip run at ESTIMATED_SPS, a grpo run at the group rate
    from harness.config import ESTIMATED_GROUP_SPS, ESTIMATED_SPS, estimated_minutes
    ppo = next(r for r in runs if r.algo == "ppo_clip")
    grpo = [r for r in runs if r.algo == "grpo"][:2]
    weight = ESTIMATED_ENV_WEIGHT["mujoco"]
    lone = ppo.steps / ESTIMATED_SPS["mujoco"] * weight[ppo.env]
    group = grpo[0].steps / ESTIMATED_GROUP_SPS["mujoco"] * weight[grpo[0].env]
    units = [[ppo], [grpo[0]], [grpo[1]]]
    assert estimated_minutes(units, jobs=1) == pytest.approx((lone + 2 * group) / 60)
    assert estimated_minutes(units, jobs=2) == pytest.approx(max(lone, 2 * group) / 60)
    assert max(map(len, plan_batches(runs, 2, jobs=2))) == 2
    # numbers that may differ per run stack; an option the minibatch loop branches on does not
    a, b = plan("/tmp/unused", "algo.clip_eps=0.1", env="Hopper-v5"), plan("/tmp/unused", "algo.value_clip=true",
                                                                           env="Hopper-v5")
    base = plan("/tmp/unused", env="Hopper-v5")
    assert stack_key(a[0]) == stack_key(base[0]) != stack_key(b[0])
    assert stack_key(plan("/tmp/unused", "algo.diagnostics=last_epoch", env="Hopper-v5")[0]) is None


def test_a_run_checkpointed_in_a_stack_resumes_alone_and_the_other_way_round(tmp_path, monkeypatch):
    """The checkpoint of a run is the same whichever engine wrote it: a stack killed after its
    second checkpoint resumes each run alone, and lone runs killed the same way resume as a stack;
    every run ends done, resumed at update 2, with the rows a kill leaves intact."""
    import harness.train as train_mod
    from harness.train import train, train_batch
    from tests.helpers import TINY, plan
    real_save = train_mod._save

    def kill_after(saves: int):
        calls = [0]

        def save_then_die(*a, **k):
            real_save(*a, **k)
            calls[0] += 1
            if calls[0] == saves:
                raise KeyboardInterrupt   # a BaseException: the folders are left as a kill leaves them
        return save_then_die

    words = dict(env="Hopper-v5", steps=1536, seeds=2, checkpoint_every=1)
    stacked = plan(tmp_path / "stacked", *TINY, **words)
    monkeypatch.setattr(train_mod, "_save", kill_after(4))          # 2 runs x 2 updates
    with pytest.raises(KeyboardInterrupt):
        train_batch(stacked)
    monkeypatch.setattr(train_mod, "_save", real_save)
    for run in stacked:
        record = train(run)
        assert record["status"] == "done" and record["resumed_from"]["update"] == 2, record
        assert record["resumed_from"]["env_state_exact"], "the stack's rows did not restore as the run's environment"

    alone = plan(tmp_path / "alone", *TINY, **words)
    for run in alone:
        monkeypatch.setattr(train_mod, "_save", kill_after(2))
        with pytest.raises(KeyboardInterrupt):
            train(run)
    monkeypatch.setattr(train_mod, "_save", real_save)
    records = train_batch(alone)
    assert all(r["status"] == "done" and r["resumed_from"]["update"] == 2 and r["resumed_from"]["env_state_exact"]
               for r in records), records
    for run in stacked + alone:
        rows = read_metrics(run.run_dir)
        assert [int(r["update"]) for r in rows] == list(range(1, 7))


def read_metrics(run_dir):
    import csv
    with open(run_dir / "metrics.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_runs_whose_batches_differ_in_shape_update_as_separate_stacks_of_their_own_numbers():
    """DAPO's dynamic sampling may keep fewer groups in one run's batch than in its stack-mates':
    the harness then updates the runs of each batch shape as their own stack in the same step
    (``harness.train._update``), and each run's new weights are bit-identical to its update alone
    (a stack of one through the suite's stacked agent, as a lone run trains); a run without a batch
    gets no update."""
    from types import SimpleNamespace

    from harness.train import _update
    cls, runs = _runs("dapo", [{}, {"clip_eps_high": 0.3}, {}], num_epochs=2)
    suite = suites.get("mujoco")
    agent, algo, batch = runs[1]
    first_group = batch.groups == batch.groups[0]
    runs[1] = (agent, algo, batch.select_columns(torch.nonzero(first_group, as_tuple=True)[0]))
    assert runs[1][2].num_columns < runs[0][2].num_columns == runs[2][2].num_columns
    alone, together = _clone(runs), _clone(runs)
    for agent, algo, batch in alone:
        cls.update_runs(RunStack([algo], suite.stack_agents([agent]), [batch]))
    members = [SimpleNamespace(algo=a, agent=g) for g, a, _ in together]
    batches = [b for _, _, b in together]
    updates = _update(cls, suite, True, members + [SimpleNamespace(algo=None, agent=None)], batches + [None])
    assert updates[3] is None and all(isinstance(u, dict) for u in updates[:3])
    for k, ((agent_a, _, _), (agent_t, _, _)) in enumerate(zip(alone, together)):
        for p_a, p_t in zip(agent_a.parameters(), agent_t.parameters()):
            assert torch.equal(p_a, p_t), f"run {k}: its weights depend on the runs it updated beside"
