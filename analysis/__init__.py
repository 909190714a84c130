"""pg-arena analysis: stored runs -> the PPO paper's tables with bootstrap CIs, figures, reports,
and the check of a new variant against a baseline (on stored runs: ``compare_stored``; the
command that first runs what either side is missing is ``harness.compare``).

    from analysis import load_results, render_report
    results = load_results("results", suite="mujoco")      # tidy frame + run table + warnings
    render_report("results", "mujoco")                     # results/reports/mujoco/index.html
"""
from analysis.load import AnalysisError, Results, ResultsWarning, load_results

__all__ = ["AnalysisError", "Results", "ResultsWarning", "load_results", "render_report", "build_report",
           "compare_stored", "compare_scores"]


def __getattr__(name):  # the heavy parts (matplotlib, rliable) load on first use
    if name in ("render_report", "build_report"):
        from analysis import report
        return getattr(report, name)
    if name in ("compare_stored", "compare_scores"):
        from analysis import compare
        return getattr(compare, name)
    raise AttributeError(name)
