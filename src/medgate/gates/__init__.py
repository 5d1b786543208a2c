"""Gates made of other gates: the routing gate and the full pipeline.

Each room has its own gate (:class:`medgate.hrs.gate.HRSGate`,
:class:`medgate.careguard.gate.CareGuardGate`); the gates here only combine them, and
:mod:`medgate.pipeline` assembles whichever the configured profile names.
"""
