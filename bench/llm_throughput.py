"""pg-arena's GRPO against TRL's GRPOTrainer on the same tiny model, task and batch.

    .venv/bin/pip install -e '.[llm,bench]'          # trl is only needed here
    OMP_NUM_THREADS=1 .venv/bin/python bench/llm_throughput.py [--steps 1000] [--eval-every 100] [--task add]

Both sides start from the same SFT warm start of the suite's ``tiny`` Llama (2 layers,
128 wide) on ``--task sort`` (3-6 digits; default) or ``--task add`` (multi-digit addition), draw 16 prompts x 8 completions of at most 16
tokens per step, fp32 on the CPU with one torch thread, and are evaluated by the same
code (``suites.llm_toy.evaluate``: held-out exact match of sampled completions). Eval
time is excluded from the wall times. Settings are matched to TRL's defaults:

| setting              | TRL GRPOTrainer (1.x default)     | pg-arena (here)                       |
|----------------------|-----------------------------------|---------------------------------------|
| loss aggregation     | loss_type="dapo": / active tokens | algo.loss_agg=token-mean              |
| advantage            | (r - mean_g) / (std_g + 1e-4)     | (r - mean_g) / (std_g + 1e-6)         |
| KL to reference      | beta=0.0 (no reference model)     | algo.kl_coef=0                        |
| updates per batch    | num_iterations=1, one step        | num_epochs=1, num_minibatches=1       |
| clip                 | epsilon=0.2                       | clip_eps=0.2                          |
| optimiser            | AdamW, wd 0, eps 1e-8, clip 1.0   | Adam, eps 1e-5, max_grad_norm 1.0     |
| learning rate        | --lr, constant (set here; TRL's default is linear decay) | --lr, constant |
| logged KL / entropy  | from the training forward pass    | diagnostics=last_epoch (same; no extra pass) |
| reward               | 1 if exact answer then EOS (read from completion_ids: TRL strips EOS from the text) | same (suite.missing_eos_score=none) |
| generation           | transformers' generate over the 128 rows | a group's prompt run once, finished rows dropped (the same tokens) |

Practicalities with TRL on a CPU (seen on this machine): ``use_cpu=True`` and ``bf16=False``,
one torch thread (two busy threads with another process running were 20-60x slower).
Prints a table and writes it (and the learning curves) as JSON to ``--out``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import algos  # noqa: E402
from suites.llm_toy import LLMToyConfig, LLMToySuite, evaluate  # noqa: E402
from suites.llm_toy.models import LMAgent  # noqa: E402

PROMPTS, GROUP, MAX_NEW = 16, 8, 16


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=1000, help="optimizer steps (batches of 16 x 8) per side")
    p.add_argument("--eval-every", type=int, default=100, help="steps between held-out evaluations")
    p.add_argument("--eval-prompts", type=int, default=256)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--task", choices=("sort", "add"), default="sort",
                   help="a verifiable task (exact match): sort, or add (multi-digit addition, issue 31)")
    p.add_argument("--only", choices=("pg-arena", "trl"), default=None, help="run one side only")
    p.add_argument("--out", default="results/bench/llm_throughput.json")
    return p.parse_args()


def suite_config() -> LLMToyConfig:
    # exact match only (TRL's reward below cannot know the suite's missing-EOS score)
    return LLMToyConfig(max_new_tokens=MAX_NEW, missing_eos_score=None)


class Clock:
    """Wall time of training, with evaluation time taken out."""

    def __init__(self):
        self.start = time.perf_counter()
        self.excluded = 0.0

    def elapsed(self) -> float:
        return time.perf_counter() - self.start - self.excluded


def held_out(agent, env, args, step, clock, curve):
    t = time.perf_counter()
    row = evaluate(agent, env, args.eval_prompts, seed=123)
    clock.excluded += time.perf_counter() - t
    curve.append({"step": step, "wall_s": round(clock.elapsed(), 2), "success": row["eval_return_mean"],
                  "greedy": row["eval_greedy_return"]})
    print(f"  step {step:5d}  train wall {clock.elapsed():7.1f} s  held-out success {row['eval_return_mean']:.3f}",
          flush=True)


def run_pg_arena(args, suite, cfg, env) -> dict:
    cls = algos.get("grpo")
    algo_cfg = cls.Config(**{**suite.defaults_for(cls), "group_size": GROUP, "num_groups": PROMPTS,
                             "num_epochs": 1, "num_minibatches": 1, "kl_coef": 0.0, "loss_agg": "token-mean",
                             "scale_rewards": True, "clip_eps": 0.2, "lr": args.lr, "max_grad_norm": 1.0,
                             "diagnostics": "last_epoch"})
    torch.manual_seed(args.seed)
    agent = suite.make_agent(env, cfg)
    collector, _ = suite.make_collector(args.task, cfg, cls.needs(algo_cfg), algo_cfg, args.seed)
    algo = cls(agent, algo_cfg, total_updates=args.steps, seed=args.seed)
    curve, gen_s, tokens = [], 0.0, 0
    clock = Clock()
    held_out(agent, env, args, 0, clock, curve)
    for step in range(1, args.steps + 1):
        t = time.perf_counter()
        batch, _ = collector.collect(agent)
        gen_s += time.perf_counter() - t
        tokens += int(batch.mask.sum())
        algo.update(batch)
        if step % args.eval_every == 0 or step == args.steps:
            held_out(agent, env, args, step, clock, curve)
    wall = clock.elapsed()
    return {"wall_s": wall, "s_per_step": wall / args.steps, "completions_per_s": args.steps * PROMPTS * GROUP / wall,
            "generation_s": gen_s, "update_s": wall - gen_s, "tokens": tokens, "curve": curve}


def hf_tokenizer(tok):
    """The suite's character tokenizer as a transformers tokenizer (same ids), for TRL."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    vocab = {s: i for i, s in enumerate(tok.SPECIALS)}
    vocab.update({c: i + len(tok.SPECIALS) for i, c in enumerate(tok.alphabet)})
    core = Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    fast = PreTrainedTokenizerFast(tokenizer_object=core, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>")
    assert fast("<bos>4132=", add_special_tokens=False)["input_ids"] == [tok.bos_id] + tok.encode("4132=")
    return fast


def run_trl(args, suite, cfg, env) -> dict:
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer
    import tempfile

    tok = env.tokenizer
    task = env.task
    torch.manual_seed(args.seed)
    agent = suite.make_agent(env, cfg)            # the same SFT weights
    policy = agent.policy
    prompts = task.prompts(np.random.default_rng(args.seed), PROMPTS * args.steps, "train")
    dataset = Dataset.from_dict({"prompt": ["<bos>" + p for p in prompts]})

    def exact_match(prompts, completions, completion_ids, **kwargs):
        # completion_ids, not the text: TRL decodes with skip_special_tokens, dropping EOS
        out = []
        for p, ids in zip(prompts, completion_ids):
            ended = len(ids) > 0 and ids[-1] == tok.eos_id
            text = tok.decode(ids[:-1] if ended else ids)
            out.append(task.gold(p.replace("<bos>", ""), text, ended))
        return out

    curve: list[dict] = []
    clock_box: dict = {}
    eval_agent = LMAgent(policy, None, env.prompt_len, tok.pad_id, tok.eos_id, bf16=False)

    class Timing(TrainerCallback):
        def on_train_begin(self, a, state, control, **kw):
            clock_box["clock"] = Clock()
            held_out(eval_agent, env, args, 0, clock_box["clock"], curve)

        def on_step_end(self, a, state, control, **kw):
            if state.global_step % args.eval_every == 0 or state.global_step == args.steps:
                policy.eval()
                held_out(eval_agent, env, args, state.global_step, clock_box["clock"], curve)

    with tempfile.TemporaryDirectory() as out_dir:
        config = GRPOConfig(
            output_dir=out_dir, use_cpu=True, bf16=False, fp16=False, seed=args.seed, report_to=[],
            per_device_train_batch_size=PROMPTS * GROUP, gradient_accumulation_steps=1, num_generations=GROUP,
            max_completion_length=MAX_NEW, temperature=1.0, learning_rate=args.lr, lr_scheduler_type="constant",
            max_steps=args.steps, save_strategy="no", logging_steps=max(1, args.eval_every), beta=0.0,
            num_iterations=1, epsilon=0.2, loss_type="dapo", scale_rewards="group", max_grad_norm=1.0,
            dataloader_num_workers=0, log_completions=False)
        trainer = GRPOTrainer(model=policy, reward_funcs=[exact_match], args=config, train_dataset=dataset,
                              processing_class=hf_tokenizer(tok), callbacks=[Timing()])
        trainer.train()
    wall = clock_box["clock"].elapsed()
    return {"wall_s": wall, "s_per_step": wall / args.steps, "completions_per_s": args.steps * PROMPTS * GROUP / wall,
            "curve": curve}


def time_to(curve: list[dict], target: float) -> float | None:
    return next((p["wall_s"] for p in curve if p["success"] >= target), None)


def main():
    args = parse_args()
    torch.set_num_threads(1)
    suite, cfg = LLMToySuite(), suite_config()
    env = suite.make_env(args.task, cfg)
    results = {}
    for side, fn in (("pg-arena", run_pg_arena), ("trl", run_trl)):
        if args.only in (None, side):
            print(f"{side}: {args.steps} steps of {PROMPTS} prompts x {GROUP} completions", flush=True)
            results[side] = fn(args, suite, cfg, env)
    print("\n| | s/step | completions/s | start | end | best | wall s |")
    print("|---|---|---|---|---|---|---|")
    for side, r in results.items():
        c = r["curve"]
        print(f"| {side} | {r['s_per_step']:.3f} | {r['completions_per_s']:.0f} | {c[0]['success']:.3f} | "
              f"{c[-1]['success']:.3f} | {max(p['success'] for p in c):.3f} | {r['wall_s']:.0f} |")
    if len(results) == 2:
        a, t = results["pg-arena"], results["trl"]
        target = t["curve"][-1]["success"]
        print(f"\nspeed per sample: pg-arena / TRL = {a['completions_per_s'] / t['completions_per_s']:.2f}x")
        print(f"wall time to TRL's final success {target:.3f}: pg-arena {time_to(a['curve'], target)} s, "
              f"TRL {time_to(t['curve'], target)} s")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"args": vars(args), "versions": _versions(), **results}, indent=2))
    print(f"\nwritten: {out}")


def _versions():
    from importlib import metadata
    out = {}
    for name in ("torch", "transformers", "trl"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


if __name__ == "__main__":
    main()
