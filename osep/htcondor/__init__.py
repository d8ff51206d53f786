"""The HTCondor adapter, and the only package that imports the bindings: pure ClassAd translation
(:mod:`.ads`, one ad; :mod:`.reading`, a pool's answers into a snapshot), the live pool (:mod:`.live`),
its negotiator ceilings (:mod:`.ceilings`) and job event logs (:mod:`.eventlog`); :mod:`.settings` is
plain data."""
