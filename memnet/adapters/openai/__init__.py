"""The chat-completions extractor (spec 13): OpenAI-compatible servers and Azure OpenAI,
through the ``openai`` SDK. Imported only when ``MEMNET_EXTRACTOR`` names it."""
