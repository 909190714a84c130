"""Generation of the LLM toy suite with its two exact savings against the plain loop over every row.

    OMP_NUM_THREADS=1 .venv/bin/python bench/llm_generation.py [--task sort add] [--batches 60]

``suites.llm_toy.models.generate`` runs a group's shared prompt through the model once
(``share_prompts``) and drops finished rows from the batch (``drop_finished``); with both off it
is the plain KV-cache loop over every row to the step where the last row ends. On the suite's
SFT warm start of the ``tiny`` model, GRPO's batch (16 prompts x 8 completions, the suite's
length limit), the same prompts and generator seeds for each setting, the settings interleaved
batch by batch (the first 10 batches not timed). Each batch's tokens, lengths and
log-probabilities are checked equal to the plain loop's, bit for bit, before a time counts.
Prints milliseconds per batch and the ratio to the plain loop. Run it alone on the machine.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from suites.llm_toy import LLMToyConfig, LLMToySuite  # noqa: E402
from suites.llm_toy.models import generate  # noqa: E402
from suites.llm_toy.warmstart import encode_prompts  # noqa: E402

PROMPTS, GROUP, WARMUP = 16, 8, 10
SETTINGS = {"plain loop": dict(share_prompts=False, drop_finished=False),
            "prompt shared": dict(share_prompts=True, drop_finished=False),
            "finished dropped": dict(share_prompts=False, drop_finished=True),
            "both (the default)": dict(share_prompts=True, drop_finished=True)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", nargs="+", default=["sort", "add"])
    p.add_argument("--batches", type=int, default=60)
    args = p.parse_args()
    if args.batches <= WARMUP:
        p.error(f"--batches must exceed the {WARMUP} untimed warm-up batches")
    torch.set_num_threads(1)
    suite, cfg = LLMToySuite(), LLMToyConfig()
    print("| task | generation | ms per batch | vs the plain loop | response: mean / batch's longest, averaged |")
    print("|---|---|---:|---:|---:|")
    for task in args.task:
        env = suite.make_env(task, cfg)
        agent = suite.make_agent(env, cfg)
        tok = env.tokenizer
        texts = env.task.prompts(np.random.default_rng(0), PROMPTS * args.batches, "train")
        batches = [encode_prompts(tok, [t for t in texts[i * PROMPTS:(i + 1) * PROMPTS] for _ in range(GROUP)],
                                  env.prompt_len) for i in range(args.batches)]
        seconds = dict.fromkeys(SETTINGS, 0.0)
        lengths = []
        for i, ids in enumerate(batches):
            names = list(SETTINGS) if i % 2 == 0 else list(reversed(SETTINGS))
            outputs = {}
            for name in names:
                generator = torch.Generator().manual_seed(i)
                start = time.perf_counter()
                outputs[name] = generate(agent.policy, ids, env.max_new_tokens, tok.pad_id, tok.eos_id,
                                         generator=generator, bf16=False, **SETTINGS[name])
                if i >= WARMUP:
                    seconds[name] += time.perf_counter() - start
            plain = outputs["plain loop"]
            for name, out in outputs.items():
                if not all(torch.equal(a, b) for a, b in zip(out, plain)):
                    raise SystemExit(f"{task}, batch {i}: {name} differs from the plain loop")
            lengths.append((float(plain[1].float().mean()), int(plain[1].max())))
        timed = args.batches - WARMUP
        mean_len, longest = np.mean(lengths, axis=0)
        for name in SETTINGS:
            print(f"| {task} | {name} | {seconds[name] / timed * 1e3:.1f} | "
                  f"{seconds[name] / seconds['plain loop']:.2f} | {mean_len:.1f} / {longest:.1f} |", flush=True)


if __name__ == "__main__":
    main()
