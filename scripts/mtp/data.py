"""The demos' task data: the generator of scripts/train-deepseek-v3-demo.py (the rules every demo's
README states: packed 48-token rows of add/sort/rev/copy problems from position 0), imported from
that script rather than written twice."""
import importlib.util
import os

_SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "train-deepseek-v3-demo.py")


def _load_generator():
    spec = importlib.util.spec_from_file_location("demo_tasks", _SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tasks = _load_generator()
END, PAD, SEQLEN = tasks.END, tasks.PAD, tasks.SEQLEN
encode, decode = tasks.encode, tasks.decode


def held_out(eval_json):
    """Problems never trained on: the public eval set (reference/eval.json) and the demos' validation
    set (seed 3003, 600 problems), as (task, prompt, answer)."""
    return tasks.public_problems(eval_json), tasks.eval_set(tasks.EVAL_SEEDS["val"], 60)


def excluded_prompts(eval_json):
    public, val = held_out(eval_json)
    return {p for _, p, _ in public} | {p for _, p, _ in val}


def batch(torch, rng, rows, excluded, mix):
    """(ids [rows, SEQLEN], targets) with targets = the token where it is an answer token or
    <|end|>, -100 elsewhere (prompts, padding)."""
    return tasks.training_batch(torch, rng, rows, excluded, mix)
