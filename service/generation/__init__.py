"""The generator port and its adapters (extractive, watsonx), prompts and the token budget."""
