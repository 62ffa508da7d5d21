"""The query engine, the LLM port, the settings repository and the entry points."""
