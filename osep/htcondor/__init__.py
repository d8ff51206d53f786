"""The HTCondor adapter, and the only package that imports the bindings (``htcondor2``,
``classad2``): ClassAds translated (:mod:`.ads`, :mod:`.job_ads`, :mod:`.slot_ads`, :mod:`.reading`),
the live pool (:mod:`.live`), its negotiator ceilings (:mod:`.ceilings`), job event logs
(:mod:`.eventlog`) and tune sweeps run as pool jobs (:mod:`.onpool`)."""
