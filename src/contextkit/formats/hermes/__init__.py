"""Hermes agent: its session store (:mod:`.state_db`, format ``hermes``: ``state.db``) and the
ShareGPT trajectories of its batch runner (:mod:`.trajectory`, ``hermes-trajectory``)."""
