"""Recommendation engine: candidates, ranking, Pareto front, CANNOT FIT, migration and scenarios.

Entry points are in :mod:`gpufleet.recommend.api` (``recommend``, ``migrate``, ``run_scenario``,
``run_scenario_set``); result types in :mod:`gpufleet.recommend.types`. See docs/recommend.md.
"""
