"""Prompt tasks of the LLM toy suite: a tokenizer for their alphabet, seeded prompt
generators with a held-out evaluation split, demonstrations for the warm start, and the
reward (verifiable) or hidden gold score (preference) of a response.

A task works on text; the tokenizer turns text into token ids. A prompt is encoded as
``[BOS] + prompt`` left-padded to the task's fixed prompt length; a response as its
tokens followed by ``EOS``.
"""
from __future__ import annotations

import json
import zlib
from abc import ABC, abstractmethod
from pathlib import Path

import numpy as np

# The evaluation prompts are the same for every run, algorithm and seed.
EVAL_PROMPT_SEED = 20_240_601
HELD_OUT_MODULUS = 10   # one prompt in ten (by a hash of its text) is held out for evaluation
DIGIT_ALPHABET = "0123456789:="   # the built-in tokenizer's characters (sort, keywords)
# suite.digits=MIN,MAX: 1 <= MIN <= MAX <= MAX_DIGITS. No task needs more: the bound keeps
# prompts (add's long set: two numbers of MAX_DIGITS + 1 digits) far inside the model's positions.
MAX_DIGITS = 9


class CharTokenizer:
    """One token per character of the task alphabet, plus PAD (0), BOS (1), EOS (2)."""

    SPECIALS = ("<pad>", "<bos>", "<eos>")
    FILENAME = "pg_arena_tokenizer.json"

    def __init__(self, alphabet: str = DIGIT_ALPHABET):
        self.alphabet = alphabet
        self.pad_id, self.bos_id, self.eos_id = 0, 1, 2
        self._ids = {c: i + len(self.SPECIALS) for i, c in enumerate(alphabet)}
        self.vocab_size = len(alphabet) + len(self.SPECIALS)

    def encode(self, text: str) -> list[int]:
        try:
            return [self._ids[c] for c in text]
        except KeyError as exc:
            raise ValueError(f"character {exc.args[0]!r} is not in the alphabet {self.alphabet!r}") from None

    def decode(self, ids) -> str:
        """The text of ``ids``; special tokens are dropped."""
        first = len(self.SPECIALS)
        return "".join(self.alphabet[i - first] for i in ids if i >= first)

    def max_tokens(self, num_chars: int) -> int:
        return num_chars

    def save(self, folder: str | Path) -> None:
        (Path(folder) / self.FILENAME).write_text(json.dumps({"alphabet": self.alphabet}))

    @classmethod
    def load(cls, folder: str | Path) -> "CharTokenizer":
        return cls(json.loads((Path(folder) / cls.FILENAME).read_text())["alphabet"])

    def describe(self) -> dict:
        return {"kind": "char", "alphabet": self.alphabet}


class HFTokenizer:
    """A Hugging Face tokenizer of a local checkpoint behind the same small interface.
    Without a PAD token, EOS serves as PAD (masks are derived from positions, not PAD)."""

    def __init__(self, folder: str | Path):
        from transformers import AutoTokenizer
        self.tok = AutoTokenizer.from_pretrained(str(folder))
        if self.tok.eos_token_id is None:
            raise ValueError(f"the tokenizer in {folder} has no EOS token")
        self.eos_id = self.tok.eos_token_id
        self.bos_id = self.tok.bos_token_id if self.tok.bos_token_id is not None else self.eos_id
        self.pad_id = self.tok.pad_token_id if self.tok.pad_token_id is not None else self.eos_id
        self.vocab_size = len(self.tok)
        self.folder = str(folder)

    def encode(self, text: str) -> list[int]:
        return self.tok.encode(text, add_special_tokens=False)

    def decode(self, ids) -> str:
        return self.tok.decode(list(ids), skip_special_tokens=True)

    def max_tokens(self, num_chars: int) -> int:
        return num_chars + 2   # a token covers at least one ASCII character; margin for prefixes

    def describe(self) -> dict:
        return {"kind": "hf", "folder": self.folder, "vocab_size": self.vocab_size}


def load_tokenizer(model: str, alphabet: str = DIGIT_ALPHABET):
    """The suite's character tokenizer over the task's ``alphabet`` for the built-in presets; a
    checkpoint folder's own tokenizer otherwise (ours if it was saved by pg-arena)."""
    folder = Path(model)
    if (folder / CharTokenizer.FILENAME).exists():
        return CharTokenizer.load(folder)
    if folder.is_dir():
        return HFTokenizer(folder)
    return CharTokenizer(alphabet)


class Task(ABC):
    """A prompt distribution, demonstrations, and how a response is judged."""

    name: str
    summary: str                # one line for ./run_all.sh help suite=llm_toy
    verifiable: bool            # True: exact reward checked by code; False: hidden gold score, reward model
    # The characters of prompts and responses: the built-in tokenizer's vocabulary. Sort and
    # keywords keep the original one (so their warm starts are what they were); add needs "+".
    alphabet: str = DIGIT_ALPHABET
    max_prompt_chars: int
    max_new_tokens: int         # default response length limit (tokens, EOS included)
    sft_steps: int              # default warm-start length (deliberately short: the start is below the ceiling)
    max_gold: float             # the best gold score a response can get

    @abstractmethod
    def sample_prompt(self, rng: np.random.Generator) -> str:
        """One prompt from the task's distribution."""

    @abstractmethod
    def demonstration(self, prompt: str, rng: np.random.Generator) -> str:
        """A supervised response for the warm start (may be deliberately noisy)."""

    @abstractmethod
    def gold(self, prompt: str, response: str, has_eos: bool) -> float:
        """The true quality of a response (verifiable: 1 for an exact answer, else 0)."""

    @staticmethod
    def held_out(prompt: str) -> bool:
        return zlib.crc32(prompt.encode()) % HELD_OUT_MODULUS == 0

    def prompts(self, rng: np.random.Generator, n: int, split: str) -> list[str]:
        """``n`` prompts of the ``train`` or ``eval`` split (rejection sampling on the hash)."""
        want_eval = split == "eval"
        out = []
        while len(out) < n:
            p = self.sample_prompt(rng)
            if self.held_out(p) == want_eval:
                out.append(p)
        return out

    def eval_prompts(self, n: int) -> list[str]:
        return self.prompts(np.random.default_rng(EVAL_PROMPT_SEED), n, "eval")

    def long_prompts(self, n: int) -> list[str] | None:
        """``n`` prompts longer than any training prompt, scored apart as a generalisation
        score (``eval_long_return``); None for a task without such a set."""
        return None

    def describe(self) -> dict:
        return {"name": self.name, "version": 1}


class ExactDigitsTask(Task):
    """A verifiable task on numbers of ``min_digits``-``max_digits`` digits whose answer is one
    digit string: reward 1 for the exact answer followed by EOS, else 0. The warm start imitates
    demonstrations of which a fraction ``sft_noise`` have one digit wrong, so it starts clearly
    below the ceiling."""

    verifiable = True
    max_gold = 1.0
    default_digits: tuple[int, int]
    sft_noise: float

    def __init__(self, min_digits: int | None = None, max_digits: int | None = None, sft_noise: float | None = None):
        lo, hi = self.default_digits
        self.min_digits = lo if min_digits is None else min_digits
        self.max_digits = hi if max_digits is None else max_digits
        if not 1 <= self.min_digits <= self.max_digits <= MAX_DIGITS:
            raise ValueError(f"digits {self.min_digits},{self.max_digits} are not valid; "
                             f"valid: MIN,MAX with 1 <= MIN <= MAX <= {MAX_DIGITS}")
        self.sft_noise = type(self).sft_noise if sft_noise is None else sft_noise

    @abstractmethod
    def answer(self, prompt: str) -> str:
        """The one correct response (without EOS)."""

    def demonstration(self, prompt, rng):
        answer = list(self.answer(prompt))
        if self.sft_noise and rng.random() < self.sft_noise:   # a noisy demonstration: one digit wrong
            i = int(rng.integers(len(answer)))
            answer[i] = str(int(rng.integers(10)))
        return "".join(answer)

    def gold(self, prompt, response, has_eos):
        return float(has_eos and response == self.answer(prompt))

    def describe(self):
        return {"name": self.name, "version": 1, "digits": [self.min_digits, self.max_digits],
                "sft_noise": self.sft_noise}


class SortTask(ExactDigitsTask):
    """Verifiable: sort 3-6 digits. ``"4132="`` -> ``"1234"`` then EOS; reward 1 for the exact
    answer followed by EOS, else 0 (as TRL's sorting example, the issue's reference)."""

    name = "sort"
    summary = "verifiable: 4132= -> 1234 EOS (3-6 digits; suite.digits=), exact match"
    max_new_tokens = 16           # the TRL reference: at most 16 new tokens
    default_digits = (3, 6)
    # The warm start: 200 SFT steps on demonstrations of which half have one digit wrong.
    # Sampled exact match starts near 50% (greedy ~93%): clearly below the ceiling of 1.
    sft_steps = 200
    sft_noise = 0.5

    @property
    def max_prompt_chars(self):
        return self.max_digits + 1          # the digits and "="

    def sample_prompt(self, rng):
        n = int(rng.integers(self.min_digits, self.max_digits + 1))
        return "".join(map(str, rng.integers(0, 10, n))) + "="

    def answer(self, prompt: str) -> str:
        return "".join(sorted(prompt.rstrip("=")))


class AddTask(ExactDigitsTask):
    """Verifiable: add two numbers of 1-3 digits each, written most significant digit first.
    ``"482+739="`` -> ``"1221"`` then EOS; reward 1 for the exact sum followed by EOS, else 0.
    Carries make it hard for a tiny model: the first digit of the answer depends on every
    column, so unlike ``sort`` it does not saturate at the quick scale.

    Generalisation: ``long_prompts`` adds two numbers of ``max_digits + 1`` digits each, longer
    than any training or held-out prompt; their exact-match rate is ``eval_long_return``.
    """

    name = "add"
    summary = ("verifiable: 482+739= -> 1221 EOS (1-3 digits a number; suite.digits=), exact match; "
               "eval_long_return: a digit more")
    alphabet = "0123456789+="
    # Calibrated on the tiny model (SFT curves, suites/llm_toy/README.md): with 1-4 digits 200
    # SFT steps reach 1% greedy exact match; 1-3 digits learn faster, and still far from the ceiling.
    default_digits = (1, 3)
    # The warm start: demonstrations of which a tenth have one digit wrong. Unlike sort the task
    # itself keeps the start low; sort's half-noisy demonstrations only slow SFT here (after 1000
    # steps, greedy exact match 16% at noise 0.5 against 37% at 0.1; sampled 7% against 27%).
    sft_steps = 1000
    sft_noise = 0.1

    @property
    def max_prompt_chars(self):
        return 2 * (self.max_digits + 1) + 2    # the long set's two numbers, "+" and "="

    @property
    def max_new_tokens(self):
        return self.max_digits + 3              # the long set's longest sum (max_digits + 2 digits) and EOS

    def _number(self, rng, digits: int) -> int:
        """A number of exactly ``digits`` digits (no leading zero; one digit includes 0)."""
        low = 0 if digits == 1 else 10 ** (digits - 1)
        return int(rng.integers(low, 10 ** digits))

    def sample_prompt(self, rng):
        a, b = (self._number(rng, int(rng.integers(self.min_digits, self.max_digits + 1))) for _ in range(2))
        return f"{a}+{b}="

    def long_prompts(self, n: int) -> list[str]:
        rng = np.random.default_rng(EVAL_PROMPT_SEED + 1)   # fixed, as the held-out prompts
        digits = self.max_digits + 1
        return [f"{self._number(rng, digits)}+{self._number(rng, digits)}=" for _ in range(n)]

    def answer(self, prompt: str) -> str:
        a, b = prompt.rstrip("=").split("+")
        return str(int(a) + int(b))


class KeywordsTask(Task):
    """Preference: answer a prompt of 3 distinct keyword digits, e.g. ``"381:"``, with a short
    digit string. The hidden gold score rewards covering the keywords, using only keywords,
    and brevity:

        gold = |keywords used| / 3  +  0.5 * (keyword tokens / length)  -  0.2 * max(0, length - 4)

    (at most 1.5; a response without EOS gets -1). The policy never sees it: it is trained
    against a reward model fit to noisy preference pairs, and evaluated on the gold score,
    so over-optimisation of the proxy shows as the gold score falling while the proxy rises.
    """

    name = "keywords"
    summary = "preference: 381: -> a short digit string; reward model (proxy), evaluated on a hidden gold score"
    verifiable = False
    max_prompt_chars = 4
    max_new_tokens = 12
    sft_steps = 150
    max_gold = 1.5

    sft_noise = 0.5   # demonstrations: each token a random digit (not a chosen keyword) with this probability

    def __init__(self, sft_noise: float | None = None):
        self.sft_noise = type(self).sft_noise if sft_noise is None else sft_noise

    def sample_prompt(self, rng):
        return "".join(map(str, rng.choice(10, 3, replace=False))) + ":"

    def demonstration(self, prompt, rng):
        # Noisy demonstrations of mixed quality: 1-7 tokens, keywords and random digits.
        keywords = prompt.rstrip(":")
        n = int(rng.integers(1, 8))
        return "".join(str(int(rng.integers(10))) if rng.random() < self.sft_noise else keywords[int(rng.integers(3))]
                       for _ in range(n))

    def describe(self):
        return {"name": self.name, "version": 1, "sft_noise": self.sft_noise}

    def gold(self, prompt, response, has_eos):
        if not has_eos:
            return -1.0
        keywords = set(prompt.rstrip(":"))
        n = len(response)
        if n == 0:
            return 0.0
        coverage = len(keywords & set(response)) / 3
        precision = sum(c in keywords for c in response) / n
        return coverage + 0.5 * precision - 0.2 * max(0, n - 4)


TASKS = {"sort": SortTask, "add": AddTask, "keywords": KeywordsTask}
VERIFIABLE = tuple(k for k, v in TASKS.items() if v.verifiable)
PREFERENCE = tuple(k for k, v in TASKS.items() if not v.verifiable)
