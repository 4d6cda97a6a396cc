"""aider: its chat history (:mod:`.chat_history`, format ``aider``: ``.aider.chat.history.md``) and
its LLM history (:mod:`.llm_history`, ``aider-llm``: ``--llm-history-file``)."""
