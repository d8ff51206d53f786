"""Tuning osep's settings on a pool's own recorded history (``osep tune``).

A candidate is one choice of the settings an administrator picks (:mod:`osep.tune.candidates`); a
history is the recorded workload it runs on, cut into the period tuned on and the period held out
(:mod:`osep.tune.history`); each candidate is simulated with the same ``decide`` the daemon runs
(:mod:`osep.tune.sweep`), the results kept as they come so that an interrupted sweep goes on where it
stopped (:mod:`osep.tune.journal`), and the front of policy violation against cost and the
recommendation are worked out from them (:mod:`osep.tune.front`).
"""
