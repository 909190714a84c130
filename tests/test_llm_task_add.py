"""task=add of the LLM toy suite (issue 31): the seeded generator, answers against Python's
integers, the exact-match verifier, the held-out split, the longer generalisation set and its
evaluation column, and the refusal of a bad ``suite.digits=``. Sort must be what it was: its
prompts, demonstrations and cache description are pinned to the values before the refactor.
"""
import numpy as np
import pytest

pytest.importorskip("transformers")

from harness import cli  # noqa: E402
from suites.llm_toy import LLMToyConfig, LLMToySuite, evaluate, make_task  # noqa: E402
from suites.llm_toy.tasks import MAX_DIGITS, AddTask, CharTokenizer, SortTask  # noqa: E402


def operands(prompt: str) -> tuple[str, str]:
    assert prompt.endswith("=") and prompt.count("+") == 1, prompt
    a, b = prompt[:-1].split("+")
    return a, b


def test_generator_is_deterministic_by_seed():
    task = AddTask()
    first = task.prompts(np.random.default_rng(3), 50, "train")
    assert first == task.prompts(np.random.default_rng(3), 50, "train")
    assert first != task.prompts(np.random.default_rng(4), 50, "train")
    rng_a, rng_b = np.random.default_rng(5), np.random.default_rng(5)
    assert [task.demonstration(p, rng_a) for p in first] == [task.demonstration(p, rng_b) for p in first]


def test_answers_are_python_integer_sums():
    task = AddTask()
    prompts = task.prompts(np.random.default_rng(0), 500, "train") + task.long_prompts(100)
    for p in prompts:
        a, b = operands(p)
        assert task.answer(p) == str(int(a) + int(b))
    assert task.answer("4821+377=") == "5198" and task.answer("999+1=") == "1000" and task.answer("0+0=") == "0"
    # the generator draws every length in the range, no leading zeros, and carries happen
    lengths = {len(x) for p in prompts[:500] for x in operands(p)}
    assert lengths == set(range(task.min_digits, task.max_digits + 1))
    assert all(x == "0" or not x.startswith("0") for p in prompts for x in operands(p))
    assert any(len(task.answer(p)) > max(map(len, operands(p))) for p in prompts)


def test_verifier_scores_the_exact_answer_then_eos_only():
    task = AddTask(sft_noise=0.5)
    assert task.gold("4821+377=", "5198", True) == 1.0
    assert task.gold("4821+377=", "5198", False) == 0.0              # no EOS by the limit
    assert task.gold("4821+377=", "5188", True) == 0.0               # a carry dropped
    assert task.gold("4821+377=", "05198", True) == 0.0              # not the exact text
    assert task.gold("4821+377=", "51980", True) == 0.0
    assert task.gold("4821+377=", "", True) == 0.0
    # noisy demonstrations: one digit wrong at most, and some are wrong
    rng = np.random.default_rng(0)
    prompts = task.prompts(rng, 400, "train")
    demos = [task.demonstration(p, rng) for p in prompts]
    wrong = [sum(x != y for x, y in zip(d, task.answer(p))) for p, d in zip(prompts, demos)]
    assert all(len(d) == len(task.answer(p)) for p, d in zip(prompts, demos)) and max(wrong) == 1
    assert 0.3 < np.mean(wrong) < 0.5      # half noisy, and a tenth of those draw the right digit again
    clean = AddTask(sft_noise=0.0)
    assert all(clean.demonstration(p, rng) == clean.answer(p) for p in prompts)


def test_held_out_prompts_never_appear_in_training_draws():
    task = AddTask()
    held_out = task.eval_prompts(200)
    assert held_out == task.eval_prompts(200) and all(task.held_out(p) for p in held_out)
    train = set()
    for seed in range(5):
        train |= set(task.prompts(np.random.default_rng(seed), 2000, "train"))
    assert not train & set(held_out)
    assert held_out[:50] == task.eval_prompts(50)


def test_long_set_has_more_digits_than_any_training_prompt():
    for digits in (None, (2, 3), (1, 1)):
        task = AddTask() if digits is None else AddTask(*digits)
        train = task.prompts(np.random.default_rng(0), 2000, "train") + task.eval_prompts(200)
        longest = max(len(x) for p in train for x in operands(p))
        assert longest == task.max_digits
        long = task.long_prompts(200)
        assert long == task.long_prompts(200)                      # the same for every run
        assert min(len(x) for p in long for x in operands(p)) > longest
        # prompt and response fit the lengths the suite sizes the model by
        assert max(map(len, long)) <= task.max_prompt_chars
        assert max(len(task.answer(p)) for p in long) + 1 <= task.max_new_tokens
        assert all(set(p) <= set(task.alphabet) for p in long)


def test_sort_is_unchanged_by_the_shared_digits_base():
    # pinned with the code before task=add: the same prompts, demonstrations and cache key
    task = SortTask()
    rng = np.random.default_rng(7)
    prompts = task.prompts(rng, 6, "train")
    assert prompts == ["668578=", "032=", "904817=", "483=", "2729=", "4555="]
    assert [task.demonstration(p, rng) for p in prompts] == ["566788", "023", "014789", "348", "2271", "4555"]
    assert task.describe() == {"name": "sort", "version": 1, "digits": [3, 6], "sft_noise": 0.5}
    assert (task.max_prompt_chars, task.max_new_tokens, task.long_prompts(4)) == (7, 16, None)
    assert task.alphabet == CharTokenizer().alphabet    # sort's vocabulary (and warm start) stays


def test_suite_digits_option_reaches_the_tasks():
    cfg = LLMToyConfig(digits=(2, 5))
    add, sort = make_task("add", cfg), make_task("sort", cfg)
    assert (add.min_digits, add.max_digits) == (2, 5) == (sort.min_digits, sort.max_digits)
    assert add.describe()["digits"] == [2, 5]                        # a new warm start, cached apart
    assert make_task("keywords", cfg).describe()["name"] == "keywords"


@pytest.mark.parametrize("digits", ["0,4", "3,2", "1,10", "4", "1,2,3"])
def test_bad_digits_are_refused_at_planning_with_the_valid_range(tmp_path, capsys, digits):
    code = cli.main(["suite=llm_toy", "task=add", "algo=grpo", "scale=smoke", "plan=true",
                     f"results_dir={tmp_path}", f"suite.digits={digits}"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and "suite.digits=" in err and f"1 <= MIN <= MAX <= {MAX_DIGITS}" in err
    assert not any(tmp_path.iterdir())                               # refused before anything is written


@pytest.mark.parametrize("digits", [(0, 4), (3, 2), (1, MAX_DIGITS + 1)])
def test_tasks_refuse_bad_digits_too(digits):
    for cls in (AddTask, SortTask):
        with pytest.raises(ValueError, match="1 <= MIN <= MAX"):
            cls(*digits)


def test_help_lists_the_task(capsys):
    assert cli.main(["help", "suite=llm_toy"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.strip().startswith("add "))
    assert "482+739=" in line and "eval_long_return" in line
    assert "suite.digits=" in out


def test_evaluation_reports_the_long_set_beside_the_main_score(tmp_path, monkeypatch):
    # an untrained policy (no SFT steps): only the columns are checked, not the levels
    monkeypatch.setenv("PG_ARENA_CACHE", str(tmp_path))
    suite = LLMToySuite()
    results = {}
    for name in ("add", "sort"):
        cfg = LLMToyConfig(sft_steps=0)
        env = suite.make_env(name, cfg)
        results[name] = evaluate(suite.make_agent(env, cfg), env, 8, seed=0)
    assert 0.0 <= results["add"]["eval_long_return"] <= 1.0
    assert "eval_long_return" not in results["sort"]
    assert set(results["sort"]) < set(results["add"])
