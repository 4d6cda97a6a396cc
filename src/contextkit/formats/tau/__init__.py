"""tau-bench and tau2-bench results files (:mod:`.tau_bench`, format ``tau-bench``;
:mod:`.tau2_bench`, ``tau2-bench``)."""
