"""The log reader: the figures a vLLM or SGLang start prints, one log line shape an entry of data."""
