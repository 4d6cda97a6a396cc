"""OpenHands: three readers over one event model (:mod:`._events`): saved event streams
(:mod:`.trajectory`, format ``openhands``), evaluation and resolver output (:mod:`.evaluation`,
``openhands-eval``), and the V1 software-agent-sdk's persisted conversations (:mod:`.sdk`,
``openhands-sdk``)."""
