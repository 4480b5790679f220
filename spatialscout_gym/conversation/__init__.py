"""The VLM conversation layer (docs/architecture.md "conversation"): messages in neutral form,
one codec per wire format, the prompt, reply text, delivered images, tool schemas, the
provider clients and the request cache."""
