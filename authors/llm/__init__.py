"""The LLM author: a chat model (any OpenAI-compatible endpoint) writes the kernels; see README.md."""
