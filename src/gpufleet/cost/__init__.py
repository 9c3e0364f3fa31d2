"""Pricing of estimates against offers: schedules (:mod:`.schedule`), price kinds (:mod:`.prices`) and the
spot expected-cost model (:mod:`.spot`, assumptions in ``data/spot_assumptions.csv``).
"""
